"""Build the shipped reference table from recordings of healthy machines, and measure verdicts on them.

``python -m linkscope.judge.refbuild`` (from the repository root) reads every recording of
:data:`RECORDINGS` whose role is ``reference`` and writes ``src/linkscope/judge/references.json``;
``--check`` says whether the shipped file is what it would write; ``--rates`` judges every
recording (every role of :data:`ROLES`) against the shipped table, as ``linkscope check`` judges a file
(``judge.runs.judge_runs``: run-wide causes and a survey's shared-load evidence included), and prints,
per recording, how many numbers are ok, low, suspicious-high and not judged, and the totals of each
role apart.

A ``broken`` recording declares the causes it was made with (:attr:`Recording.causes`, the cause keys
``check`` names: ``Judgement.cause_key``). For each broken file ``--rates`` also prints the *cause
rate*: of the rows the verdict marks low (the numbers below the healthy band: the reference's
median / (1 + band), or the twin's low threshold where there is no reference), how many name one
of the declared causes. The denominator is every low row, whatever its size or cause: a low row
with no cause or another cause is a miss. Rows that are ok (a fault that does not slow that size
beyond the healthy spread, such as NCCL through host memory at a few KiB, where launch latency
decides the time) or not judged (size 0) are not in it, and are printed beside it so they are seen.

Recordings of one *lease* (a fresh machine) share a lease name: a band is set from the spread
between leases (``references.BAND_RULE``). ``held-out`` recordings never set a reference; they
test that the references carry over to a lease they have not seen.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import LinkscopeError
from ..results.peertools.common import PeerRun
from ..topology.model import Topology
from .expect import Judge
from .references import BAND_RULE, Reference, ReferenceTable, RefKey, RefSource, family_of, family_of_pool, pool_of, table_dict

__all__ = ["RECORDINGS", "ROLES", "Recording", "build", "cause_rates", "main", "rates"]

_H200X4 = "tests/fixtures/recordings/h200x4-2026-11-28"
_H200X4_TOPO = f"{_H200X4}/linkscope/topo.json"
_H100X2 = "tests/fixtures/peertools/h100x2"
_H100X2_TOPO = f"{_H100X2}/machine-raw"
_V49 = "tests/fixtures/peertools/h100x2-visits4-9"
_V1113 = "tests/fixtures/peertools/h100x2-visits11-13"
_NCCL_H100X2 = "tests/fixtures/nccl/h100x2-2026-11-25"
_H200X2 = "docs/runs/h200x2-2026-11-28"
_H200X2_TOPO = f"{_H200X2}/call1/linkscope/topo.json"
_H200X2_LEASES = {c: f"h200x2-2026-11-28 calls {'1-2' if c <= 2 else '3-4'}" for c in (1, 2, 3, 4)}
_H200X2B = "docs/runs/h200x2-2026-11-28b"
_NCCL_OPS = ("all_gather", "all_reduce", "alltoall", "reduce_scatter", "sendrecv")
#: the pool of totals of copies queued on one GPU's copy engines (``Judge.engine_queue``): their band
QUEUED = "copy-engine queue"
#: every role a recording may have; only ``reference`` sets references
ROLES = ("reference", "held-out", "known-low", "forced", "broken")
#: The causes that name a noisy neighbour (another load on the links): the survey's background check saw it
#: (``shared-load``), or a record without that check shows its signature (``shared-load-inferred``: the
#: GPU's own memory copy low with every link active); a record's repetitions spread (``shared-link``); an
#: output with one number per copy or size names a shared link and a degraded one together, as it cannot
#: tell them apart (``link-degraded-or-shared``, ``collective-half-rate``). ``link-degraded`` (steady at half:
#: links down) and ``slow-flow`` (one flow of a group slower than the others) name other faults: misses.
NOISY_NEIGHBOUR = ("shared-load", "shared-load-inferred", "shared-link", "link-degraded-or-shared", "collective-half-rate")


@dataclass(frozen=True)
class Recording:
    """Files of one lease that share how they are read.

    Attributes:
        files: glob patterns relative to the repository root.
        lease: the machine lease they were recorded on (a fresh machine each).
        date: when (UTC date).
        role: ``reference`` (sets references), ``held-out`` (only judged: a healthy node measured as a user
            would), ``known-low`` (only judged, and low is right: its README names the cause), ``forced`` (only
            judged: a setting forced by hand, such as NCCL_ALGO or NCCL_PROTO) or ``broken`` (only judged: a node
            made broken on purpose, such as peer access off or a noisy neighbour). Each role is counted apart.
        topology: the topology they ran on (a path for ``--from``), or "" (a linkscope record's own).
        size: the buffer size where the output does not print it (nvbandwidth ``-b``), e.g. ``64MiB``.
        gpus: the topology's GPUs the tool ran on, or None (0..n-1).
        causes: for a ``broken`` recording (required there), the cause keys a right verdict names
            (``Judgement.cause_key``: ``collective-no-p2p`` for NCCL_P2P_DISABLE=1); several where
            the output cannot tell the fault from another that check names together (a noisy
            neighbour: ``shared-load`` from a survey's background check, ``collective-half-rate`` from
            nccl-tests, which prints one number per size). Empty for every other role.
    """

    files: tuple[str, ...]
    lease: str
    date: str
    role: str = "reference"
    topology: str = ""
    size: str = "512MiB"
    gpus: tuple[int, ...] | None = None
    causes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise LinkscopeError(f"recording {self.files[:1]} ({self.lease}): role {self.role!r} is not one of {', '.join(ROLES)}")
        if (self.role == "broken") != bool(self.causes):
            raise LinkscopeError(f"recording {self.files[:1]} ({self.lease}): "
                                 + ("a broken recording declares the causes it was made with (causes=...)"
                                    if self.role == "broken" else f"only a broken recording declares causes (role {self.role})"))


def _h100(visit: str, files: Iterable[str], *, size: str = "512MiB", role: str = "reference",
          topology: str = _H100X2_TOPO) -> Recording:
    return Recording(tuple(files), f"h100x2-2026-11-25 {visit}", "2026-11-25", role, topology, size)


#: Every recording the references come from (role ``reference``) or are tested on (``held-out``).
#: Left out on purpose: runs with forced NCCL algorithms/protocols (NCCL_ALGO, NCCL_PROTO), with
#: NCCL_GRAPH_REGISTER=0, and linkscope launch-shape sweeps: not how a user runs the tools; and
#: linkscope copy sweeps of visits 4-8, taken while the copy kernels were being changed.
RECORDINGS: tuple[Recording, ...] = (
    # 4 x H200 NV18 (NVSwitch), two calls of 2026-11-28 (README there)
    Recording((f"{_H200X4}/linkscope/survey.json",), "h200x4-2026-11-28 call 1", "2026-11-28"),
    Recording((f"{_H200X4}/nvbandwidth-selected.txt", f"{_H200X4}/nccl-tests/*.txt"), "h200x4-2026-11-28 call 1", "2026-11-28",
              topology=_H200X4_TOPO),
    # linkscope's bench nccl of that call (main 48d6c94): its 2-64 MiB times were its own launch overhead, 50-120 us
    # where nccl-tests -G 20 took 20-53 us on the same node (README there; fixed in b97ec50): low is the right
    # verdict on them, so they are counted apart (known-low), never as a healthy node's numbers
    Recording((f"{_H200X4}/linkscope/*_ls.txt",), "h200x4-2026-11-28 call 1", "2026-11-28", "known-low", _H200X4_TOPO),
    Recording((f"{_H200X4}/linkscope/*_ls_runs5.txt",), "h200x4-2026-11-28 call 2", "2026-11-28", "known-low", _H200X4_TOPO),
    Recording((f"{_H200X4}/nvbandwidth-all.txt",), "h200x4-2026-11-28 (call not stated)", "2026-11-28", "held-out",
              _H200X4_TOPO),
    # 1 x H200 (tests/fixtures/peertools/README.md)
    Recording(("tests/fixtures/peertools/nccl-tests-h200x1-smbi.txt",), "h200x1-2026-11-23", "2026-11-23",
              topology="tests/fixtures/machines/hgx-h200-2/expected_topology.json", gpus=(0,)),
    # 2 x H100 NV18, a fresh lease each visit (tests/fixtures/peertools/*/README.md)
    _h100("17:54", [f"{_H100X2}/nvbandwidth.txt", f"{_H100X2}/nvbandwidth.json", f"{_H100X2}/p2pBandwidthLatencyTest.txt",
                    f"{_H100X2}/nccl-tests-all_reduce.json", f"{_H100X2}/osu-DD.txt",
                    *(f"{_NCCL_H100X2}/{op}.txt" for op in ("all_reduce", "all_reduce_rerun", "all_gather", "alltoall",
                                                             "broadcast", "reduce_scatter", "sendrecv", "all_reduce_G10"))]),
    _h100("17:54", [f"{_H100X2}/nvbandwidth-b1.txt"], size="1MiB"),
    Recording((f"{_H100X2}/linkscope-survey.json",), "h100x2-2026-11-25 17:54", "2026-11-25"),
    _h100("17:54", [f"{_H100X2}/linkscope-nccl-allreduce.json"]),
    _h100("visit4", [f"{_V49}/visit4/peers_run/peers/nvbandwidth-latency-r*.txt",
                     *(f"{_V49}/visit4/peers_run/nccl/{f}" for f in ("all_gather_G10_big.txt", "all_reduce_G10_big.txt",
                                                                     "alltoall_G10_big.txt", "alltoall_G10_small.txt",
                                                                     "alltoall_eager_again.txt", "reduce_scatter_G10_big.txt"))]),
    *(_h100(f"visit{v}", [f"{_V49}/visit{v}/{'peers_run/' if v == 4 else ''}peers/nvbandwidth-b{b}{'' if v == 5 else '-r'}*.txt"],
            size=f"{b}MiB")
      for v, sizes in ((4, (1, 16, 64)), (5, (16, 64)), (6, (1, 16, 64)), (7, (1, 16, 64)), (8, (1, 16, 64)), (9, (64,)))
      for b in sizes),
    *(_h100(f"visit{v}", [f"{_V49}/visit{v}/peers/nvbandwidth-latency*.txt"]) for v in (5, 6)),
    Recording((f"{_V1113}/visit11/linkscope/pageable-r*.json", f"{_V1113}/visit11/linkscope/latency-r*.json"),
              "h100x2-2026-11-25 visit11", "2026-11-25"),
    _h100("visit11", [f"{_V1113}/visit11/peers/nvbandwidth-hostlat-r*.txt", f"{_V1113}/visit11/mpi/osu_bw_DD_*.txt",
                      *(f"{_V1113}/visit11/nccl/{f}" for f in ("all_gather_G10_r*.txt", "all_gather_eager_r*.txt",
                                                              "reduce_scatter_G10_r*.txt", "reduce_scatter_eager_r*.txt",
                                                              "all_reduce_big_*.txt", "alltoall_big_*.txt"))]),
    _h100("visit12", [f"{_V1113}/visit12/peers/nvbandwidth-latency-r*.txt", f"{_V1113}/visit12/mpi/osu_*_DD_*.txt",
                      *(f"{_V1113}/visit12/nccl/{f}" for f in ("all_gather_G10.txt", "all_gather_eager.txt", "all_reduce_eager.txt",
                                                              "all_reduce_G10.txt", "reduce_scatter_G10.txt",
                                                              "reduce_scatter_eager.txt"))]),
    # held out: a 2 x H200 lease of 2026-11-22 (its pairs have the 4 x H200 pairs' keys)
    Recording(("docs/runs/survey-512MiB-h200x2-2026-11-22.json",), "h200x2-2026-11-22", "2026-11-22", "held-out"),
    # held out: the last H100 lease (a survey on the final code, latency and nccl-tests beside it)
    Recording((f"{_V1113}/visit13/linkscope/survey.json",), "h100x2-2026-11-25 visit13", "2026-11-25", "held-out"),
    _h100("visit13", [f"{_V1113}/visit13/peers/nvbandwidth-latency-r*.txt", f"{_V1113}/visit13/mpi/osu_*_DD_*.txt",
                      f"{_V1113}/visit13/nccl/alltoall_*.txt"], role="held-out"),
    # held out: a 1 x H200 lease of 2026-11-28 (docs/runs/h200x1-2026-11-28/README.md)
    Recording(("docs/runs/h200x1-2026-11-28/linkscope/survey.json",), "h200x1-2026-11-28", "2026-11-28", "held-out"),
    Recording(("docs/runs/h200x1-2026-11-28/peers/nvbandwidth-all.txt", "docs/runs/h200x1-2026-11-28/nccl/all_reduce_*.txt"),
              "h200x1-2026-11-28", "2026-11-28", "held-out", "docs/runs/h200x1-2026-11-28/linkscope/topo.json"),
    # reference: 2 x H200 NV18, the morning of 2026-11-28, two leases (docs/runs/h200x2-2026-11-28/visit*.sh,
    # call*/x2v*.log): calls 1-2 one lease (call 2 found call 1's build, its PIDs go on from call 1's 2245-3352 to
    # 4342-5135), calls 3-4 another (call 3 rebuilt the peers, PIDs restart at 2717; call 4 built nothing,
    # 5349-9081). The survey and nvbandwidth of call 1, nccl-tests (one process -g 2, and MPI=1 one GPU per rank)
    # of every call. linkscope's own bench nccl files of these calls (ls_*) are no reference: its eager loop's
    # launch cost was still being changed (docs/benchmarks.md)
    Recording((f"{_H200X2}/call1/linkscope/survey.json",), _H200X2_LEASES[1], "2026-11-28"),
    Recording((f"{_H200X2}/call1/peers/nvbandwidth-selected.txt",), _H200X2_LEASES[1], "2026-11-28",
              topology=_H200X2_TOPO),
    *(Recording(tuple(f"{_H200X2}/call{c}/nccl/{p}_g*.txt" for p in ops), _H200X2_LEASES[c], "2026-11-28",
                topology=_H200X2_TOPO)
      for c, ops in ((1, ("a*", "reduce_scatter", "sendrecv")), (2, ("mpi_a*",)),
                     (3, ("a*", "reduce_scatter", "sendrecv", "mpi_a*")), (4, ("a*", "reduce_scatter", "sendrecv", "mpi_a*")))),
    # held out: 2 x H200 NV18, three afternoon calls of 2026-11-28, each a fresh lease (each built the peers;
    # docs/runs/h200x2-2026-11-28b/README.md): nccl-tests at their defaults (eager and -G 20, one process and
    # MPI=1, 1 GiB, -n 20 and -n 200), the healthy nvbandwidth and the surveys
    Recording((f"{_H200X2B}/call1/peers/nvbandwidth-healthy.txt",
               *(f"{_H200X2B}/call1/nccl/{op}_g*.txt" for op in _NCCL_OPS)),
              "h200x2-2026-11-28b call 1", "2026-11-28", "held-out", _H200X2_TOPO),
    Recording(tuple(f"{_H200X2B}/call2/nccl/{p}_*g0_r*.txt" for p in (*_NCCL_OPS, "mpi_all_gather", "mpi_alltoall",
                                                                          "mpi_sendrecv"))
              + tuple(f"{_H200X2B}/call2/nccl/mpi_{op}_g20_r*.txt" for op in ("all_gather", "alltoall", "sendrecv")),
              "h200x2-2026-11-28b call 2", "2026-11-28", "held-out", _H200X2_TOPO),
    Recording((f"{_H200X2B}/call2/linkscope/survey.json",), "h200x2-2026-11-28b call 2", "2026-11-28", "held-out"),
    Recording((f"{_H200X2B}/call3/nccl/all_*_n*_r*.txt",), "h200x2-2026-11-28b call 3", "2026-11-28", "held-out",
              _H200X2_TOPO),
    Recording((f"{_H200X2B}/call3/linkscope/survey.json",), "h200x2-2026-11-28b call 3", "2026-11-28", "held-out"),
    # forced: NCCL_ALGO / NCCL_PROTO set by hand (call1/nccl/*algo*, *proto*): not how a user runs the tool, so
    # neither a reference nor a healthy held-out number; judged and counted apart
    Recording((f"{_H200X2B}/call1/nccl/all_reduce_algo_*.txt", f"{_H200X2B}/call1/nccl/all_reduce_proto_*.txt"),
              "h200x2-2026-11-28b call 1", "2026-11-28", "forced", _H200X2_TOPO),
    # broken: NCCL through host memory or sockets (NCCL_P2P_DISABLE=1, + NCCL_SHM_DISABLE=1), two channels
    # (NCCL_MAX_NCHANNELS=2), a noisy neighbour (noisy.py) beside nvbandwidth, all_reduce_perf and the surveys;
    # each declares the cause it was made with
    Recording((f"{_H200X2B}/call1/broken/p2p_off_*.txt",), "h200x2-2026-11-28b call 1", "2026-11-28", "broken", _H200X2_TOPO,
              causes=("collective-no-p2p",)),
    Recording((f"{_H200X2B}/call1/broken/p2p_shm_off_*.txt",), "h200x2-2026-11-28b call 1", "2026-11-28", "broken",
              _H200X2_TOPO, causes=("collective-network-transport",)),
    Recording((f"{_H200X2B}/call1/broken/nchannels2_*.txt",), "h200x2-2026-11-28b call 1", "2026-11-28", "broken",
              _H200X2_TOPO, causes=("collective-forced-channels-2",)),
    Recording(tuple(f"{_H200X2B}/call1/broken/{f}" for f in ("noisy_all_reduce.txt", "noisy_nvbandwidth.txt",
                                                              "noisy_survey.json")),
              "h200x2-2026-11-28b call 1", "2026-11-28", "broken", _H200X2_TOPO, causes=NOISY_NEIGHBOUR),
    Recording((f"{_H200X2B}/call2/linkscope/noisy_survey.json",), "h200x2-2026-11-28b call 2", "2026-11-28", "broken",
              causes=NOISY_NEIGHBOUR),
)


def _expand(root: Path, recording: Recording) -> list[Path]:
    out: list[Path] = []
    for pattern in recording.files:
        found = sorted(root.glob(pattern))
        if not found:
            raise LinkscopeError(f"recording {pattern!r} ({recording.lease}) matches no file under {root}")
        out.extend(p for p in found if p not in out)
    return out


def _topology(root: Path, recording: Recording, run: PeerRun) -> Topology:
    if recording.topology:
        from ..discovery.auto import resolve_topology

        topology, _ = resolve_topology(None, str(root / recording.topology), None, allow_fallback=False)
        return topology
    if run.record is None or not run.record.topology:
        raise LinkscopeError(f"{run.source}: a recording without a topology (name one in RECORDINGS)")
    from ..topology.io import from_dict

    return from_dict(dict(run.record.topology))


def judged_recordings(root: Path, table: ReferenceTable, roles: Sequence[str] = ROLES,
                      recordings: Sequence[Recording] = RECORDINGS) -> Iterable[tuple[Recording, Path, Judge, PeerRun, list]]:
    """(recording, file, judge, run, prepared measurements) of every file of the given roles."""
    from ..results.peertools.detect import read
    from ..units import parse_size
    from .runs import prepared

    topologies: dict[str, Topology] = {}
    for rec in recordings:
        if rec.role not in roles:
            continue
        for path in _expand(root, rec):
            run = read(path, None, parse_size(rec.size))
            cache = rec.topology or str(path)
            topology = topologies.get(cache)
            if topology is None:
                topology = topologies[cache] = _topology(root, rec, run)
            judge = Judge(topology, gpus=rec.gpus, references=table)
            yield rec, path, judge, run, prepared(run)


def _cv(m: Any) -> float | None:
    stats = m.bandwidth if m.bandwidth is not None else m.latency
    cv = getattr(stats, "cv", None)
    return float(cv) if isinstance(cv, (int, float)) and cv >= 0 and getattr(stats, "n", 0) >= 3 else None


def _sig(value: float, digits: int = 6) -> float:
    """``value`` to ``digits`` significant digits (the file stays readable and reproducible)."""
    return float(f"{value:.{digits}g}")


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def build(root: Path, recordings: Sequence[Recording] = RECORDINGS) -> dict[str, Any]:
    """The reference table (JSON form) from the ``reference`` recordings under ``root``."""
    values: dict[RefKey, dict[tuple[str, str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    cvs: dict[RefKey, list[float]] = defaultdict(list)
    queued: set[RefKey] = set()  # totals of copies queued on one GPU's copy engines (Judge.engine_queue)
    listed: list[dict[str, Any]] = []
    empty = ReferenceTable({}, {})
    for rec, path, judge, _run, measurements in judged_recordings(root, empty, ("reference",), recordings):
        rel = path.relative_to(root).as_posix()
        listed.append({"file": rel, "lease": rec.lease, "date": rec.date})
        for m in measurements:
            if not m.ok or m.provenance.value != "measured" or (m.extra or {}).get("peer_access") is False:
                continue  # a run with peer access turned off (p2pBandwidthLatencyTest P2P=Disabled) is no reference
            try:
                key = judge.ref_key(m)
                value = judge.measured(m)[0]
            except LinkscopeError:
                continue
            if key is None or value is None or not value > 0:
                continue
            values[key][(rel, rec.lease, rec.date)].append(float(value))
            if key.direction == "total" and judge.engine_queue(m) > 1:
                queued.add(key)
            cv = _cv(m)
            if cv is not None:
                cvs[key].append(cv)
    # the spread seen between runs of one kind, per key (log ratio: as far below as above), pooled per family
    medians: dict[RefKey, float] = {}
    spreads: dict[RefKey, float] = {}
    lease_count: dict[RefKey, int] = {}
    for key, by_file in values.items():
        leases: dict[str, list[float]] = defaultdict(list)
        for (_f, lease, _d), vals in by_file.items():
            leases[lease].append(statistics.median(vals))
        median = medians[key] = statistics.median(statistics.median(v) for v in leases.values())
        lease_count[key] = len(leases)
        # every run of the kind: other leases, other files of a lease, other GPUs or pairs of the node
        spreads[key] = max(abs(math.log(v / median)) for vals in by_file.values() for v in vals)
    factor = float(BAND_RULE["spread_factor"])
    floors: Mapping[str, float] = BAND_RULE["floor"]
    families: dict[str, dict[str, Any]] = {}
    # host-small: the same host copy (link class, method, size) on other hosts, whatever their GPU model
    by_host_copy: dict[RefKey, list[float]] = defaultdict(list)
    for key, median in medians.items():
        if family_of(key) == "host-small":
            by_host_copy[replace(key, gpu="")].append(median)
    between_hosts = [max(abs(math.log(v / statistics.median(vals))) for v in vals)
                     for vals in by_host_copy.values() if len(vals) > 1]
    for family in floors:
        seen = [s for k, s in spreads.items() if lease_count[k] > 1 and family_of(k) == family
                and pool_of(k) in (family, f"{family}/{k.quantity}")]  # not copy/host's hosts
        if family == "host-small":
            seen += between_hosts
        families[family] = {"keys_with_leases": len(seen), "floor": floors[family],
                            "spread_p90": _sig(_quantile(seen, 0.9), 4) if seen else None}
    for pool in sorted({pool_of(k) for k in spreads} - set(floors)):  # a latency kind: its own mechanism
        seen = [s for k, s in spreads.items() if lease_count[k] > 1 and pool_of(k) == pool]
        if seen:
            families[pool] = {"keys_with_leases": len(seen), "floor": floors[family_of_pool(pool)],
                              "spread_p90": _sig(_quantile(seen, 0.9), 4)}
    # copies queued on one GPU's copy engines: the queue's order changes between runs and the total with it; a
    # total printed once per run (nvbandwidth) cannot show that, a record's repetitions do (their CV), so every
    # queued total borrows the largest repetition CV seen on one
    queue_cvs = [math.log1p(statistics.median(cvs[k])) for k in queued if cvs.get(k)]
    if queue_cvs:
        families[QUEUED] = {"keys_with_leases": len(queue_cvs), "floor": floors["copy"], "spread_p90": _sig(max(queue_cvs), 4),
                            "from": "the largest repetitions' CV of a total of copies queued on one GPU's copy engines"}
    refs: list[Reference] = []
    for key, by_file in values.items():
        family = family_of(key)
        fam = families.get(pool_of(key)) or families[family]
        family = pool_of(key) if pool_of(key) in families else family
        if key in queued and QUEUED in families:
            family, fam = QUEUED, families[QUEUED]
        own = spreads[key]
        n_leases = lease_count[key]
        floor = float(fam["floor"])
        pooled = fam["spread_p90"]
        spread, how = own, (f"{factor:g} x the spread between its runs ({math.expm1(own):.1%}, {n_leases} "
                            f"lease{'s' if n_leases != 1 else ''})")
        if pooled is not None and pooled > spread and family == QUEUED:
            spread, how = float(pooled), (f"{factor:g} x the copy-engine queue's spread ({math.expm1(float(pooled)):.1%}: "
                                          f"{fam['from']}, {fam['keys_with_leases']} key{'s' if fam['keys_with_leases'] != 1 else ''})")
        elif pooled is not None and pooled > spread:
            spread, how = float(pooled), (f"{factor:g} x the {family} family's spread between leases "
                                          f"({math.expm1(float(pooled)):.1%}, 90th percentile of {fam['keys_with_leases']} keys)")
        elif pooled is None and n_leases == 1:
            times = float(BAND_RULE["no_spread_factor"])
            spread, how = max(spread, math.log1p(floor * times) / factor), f"one lease and no family spread: {times:g} x the floor"
        run_cv = statistics.median(cvs[key]) if cvs.get(key) else 0.0
        if math.log1p(run_cv) > spread:
            spread, how = math.log1p(run_cv), f"{factor:g} x the repetitions' CV within a run ({run_cv:.1%})"
        band = max(floor, math.expm1(factor * spread))
        if band == floor:
            how = f"the {family} floor {floor:.0%} ({how} is below it)"
        sources = tuple(RefSource(f, lease, date, _sig(statistics.median(v)), len(v))
                        for (f, lease, date), v in sorted(by_file.items()))
        refs.append(Reference(key, _sig(medians[key]), _sig(band, 4), how, _sig(math.expm1(own), 4), sources))
    listed = [dict(t) for t in sorted({tuple(sorted(d.items())) for d in listed})]
    return table_dict(refs, families, listed)


def rates(root: Path, table: ReferenceTable, roles: Sequence[str] = ROLES,
          recordings: Sequence[Recording] = RECORDINGS) -> list[dict[str, Any]]:
    """Per file: the verdict counts of its numbers against ``table`` (judged as ``check`` judges a file),
    its role and lease, and for a broken recording the low rows that name a declared cause
    (``causes_right``) and the cause key of each low row (``low_causes``: "" for none)."""
    from .runs import judge_runs

    out = []
    for rec, path, judge, run, _measurements in judged_recordings(root, table, roles, recordings):
        counts: dict[str, int] = defaultdict(int)
        sources: dict[str, int] = defaultdict(int)
        problems = []
        low_causes: dict[str, int] = defaultdict(int)
        for j in judge_runs([run], judge)[0].judgements:
            counts[j.verdict.value] += 1
            if j.verdict.value != "not judged":
                sources[j.expectation.source] += 1
            if j.verdict.value == "low":
                low_causes[j.cause_key] += 1
            if j.verdict.value != "ok":
                problems.append(f"{j.verdict.value}: {j.line}")
        row: dict[str, Any] = {"file": path.relative_to(root).as_posix(), "role": rec.role, "lease": rec.lease, "tool": run.tool,
               "counts": dict(counts), "sources": dict(sources), "problems": problems, "low_causes": dict(low_causes)}
        if rec.causes:
            row["causes"] = list(rec.causes)
            row["causes_right"] = sum(n for key, n in low_causes.items() if key in rec.causes)
        out.append(row)
    return out


def cause_rates(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], int, int]:
    """The cause rate of the broken files among ``rows`` (``rates``): a line per file (rows low, rows low
    with a declared cause, the other causes named), and the totals (low with a declared cause, low)."""
    lines, right_total, low_total = [], 0, 0
    for row in rows:
        if "causes" not in row:
            continue
        low = row["counts"].get("low", 0)
        right = row["causes_right"]
        right_total, low_total = right_total + right, low_total + low
        others = {k or "no cause": n for k, n in row["low_causes"].items() if k not in row["causes"]}
        rest = ", ".join(f"{n} {k}" for k, n in sorted(others.items()))
        lines.append(f"cause     {row['file']}: {right} of {low} low rows name {' | '.join(row['causes'])}"
                     f"{f' (else: {rest})' if rest else ''}; {row['counts'].get('ok', 0)} ok, "
                     f"{row['counts'].get('not judged', 0)} not judged")
    return lines, right_total, low_total


def _dump(data: Mapping[str, Any]) -> str:
    """The table as JSON with one reference (and one recording) a line: small, and a diff shows which changed."""
    import json

    head = {k: v for k, v in data.items() if k not in ("references", "recordings")}
    text = json.dumps(head, indent=1)[:-2]
    for name in ("recordings", "references"):
        rows = ",\n  ".join(json.dumps(r, separators=(",", ":")) for r in data.get(name, []))
        text += f',\n "{name}": [\n  {rows}\n ]'
    return text + "\n}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linkscope.judge.refbuild", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=".", help="the repository root (default: .)")
    parser.add_argument("-o", "--output", default="src/linkscope/judge/references.json")
    parser.add_argument("--check", action="store_true", help="exit 1 when the shipped file differs from what would be written")
    parser.add_argument("--rates", action="store_true", help="judge every recording against the shipped table")
    parser.add_argument("-v", "--verbose", action="store_true", help="with --rates: every number not ok")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.rates:
        from .references import shipped

        totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        rows = rates(root, shipped())
        for row in rows:
            c = row["counts"]
            print(f"{row['role']:<9} {row['file']}: " + ", ".join(f"{v} {k}" for k, v in sorted(c.items())))
            for k, v in c.items():
                totals[row["role"]][k] += v
            if args.verbose:
                for p in row["problems"]:
                    print(f"    {p}")
        for role, c in totals.items():
            judged = sum(v for k, v in c.items() if k != "not judged")
            ok = c.get("ok", 0)
            print(f"{role}: {dict(c)}; ok {ok}/{judged} judged = {ok / judged:.1%}" if judged else f"{role}: nothing judged")
        lines, right, low = cause_rates(rows)
        print("\n".join(lines))
        if low:
            print(f"broken causes: {right} of {low} low rows name the cause the recording declares = {right / low:.1%}")
        return 0
    text = _dump(build(root))
    target = root / args.output
    if args.check:
        same = target.exists() and target.read_text(encoding="utf-8") == text
        print("references.json is up to date" if same else f"{target} differs from what refbuild writes")
        return 0 if same else 1
    from ..atomic import write_text_atomic

    write_text_atomic(target, text)
    print(f"wrote {target}")
    return 0


def _main() -> int:
    try:
        return main()
    except LinkscopeError as exc:  # a recording missing (not a checkout), a malformed file: one line
        print(f"refbuild: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(_main())
