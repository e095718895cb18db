"""Expectations from a topology: what each measured number should be, by the twin.

``Judge(topology, ...)`` answers ``expect(m)`` and ``judge(m)`` for one
:class:`~linkscope.results.schema.Measurement`, whoever made it (linkscope, or a peer tool's
output turned into Measurements by ``results.peertools``). What it reads of a measurement:

* a collective (pattern ``collective``, method ``nccl.<op>``): ``extra["ranks"]`` (default: every
  selected GPU; ``extra["rank_gpus"]`` names each rank's GPU), ``extra["busbw_gb_per_s"]`` (busbw is
  judged when present and ranks > 1, else algbw) and ``extra["time_us"]`` (the value is computed
  from it, as nccl-tests computes algbw = size / time: the printed GB/s have two decimals); the
  twin is ``CollectiveModel.predict(op, gpus, size_bytes)`` (model/collectives.py), the theoretical
  bound the narrowest route between ring neighbours (busbw is comparable with it), and the
  alternative the same collective without peer access (through host memory);
* a copy of the method table (``ce``, ``sm-push``, ``h2d`` ...): one transfer, a ``bi`` pair total
  (``scope`` total, both directions at once), or the concurrent group ``extra["transfers"]``
  (``[[src, dst], ...]``; the entry is their total: bytes / the slowest); the twin is
  ``FabricModel.predict`` (model/predict.py), the bound ``query.theoretical_gb_per_s``
  (topology/query.py). Alternatives: the copy without peer access (``ce-nopeer``), and for host
  copies pageable memory and a host link at half its width or generation. A ``ce-nopeer`` entry
  with ``extra["peer_access"]`` false (a tool that turned peer access off, p2pBandwidthLatencyTest
  P2P=Disabled) is judged as what it is, a copy staged through host memory (the host route), never
  against the peer link: the tool chose it, so it is no sign of a fault;
  ``extra["counts_read_and_write"]`` (a local copy counted twice) doubles the twin;
* an MPI bandwidth (``mpi.bw``, ``mpi.bibw``) between device buffers (``extra["buffers"]`` ``D D``)
  is judged as a ``ce`` copy (CUDA-aware MPI moves GPU buffers over the peer route with the copy
  engine: Open MPI's smcuda / UCX cuda_ipc); host buffers are not judged (no host-memory model);
* a latency (``extra["latency_kind"]`` remote-read, flag-pingpong, host-read, copy with the entry's
  method and size): ``FabricModel.latency_us``.

Every expectation also says which share of the twin's time is fixed cost (``fixed_share``): a
latency-bound size is reported as such instead of being blamed on a link (verdict.decide).

GPU numbers in the measurements are the tool's (0..n-1 of the GPUs it saw); ``gpus`` maps them onto
the topology's (``--gpus 2,3``: the tool's GPU0 is the topology's GPU2), as ``bench --gpus`` picks them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeGuard

import numpy as np

from ..errors import LinkscopeError, TopologyError
from ..model import nccl_tuning as nt
from ..model.check import model_token
from ..model.collectives import OPS, CollectiveModel, busbw_factor
from ..model.params import METHODS, ModelParams
from ..model.predict import HOST_METHODS, PEER_METHODS, FabricModel, group_elapsed_s
from ..patterns.methods import CE, CE_BLIT, CE_NOPEER, D2H, D2H_PAGEABLE, H2D, H2D_PAGEABLE, LOCAL, SM_PUSH, get_method
from ..results.schema import ALL, HOST, Measurement
from ..topology import query
from ..topology.gpufacts import facts_of_device, gpu_facts, no_facts_reason
from ..topology.model import Topology
from ..units import format_size
from .references import Reference, ReferenceTable, RefKey, host_decided, shipped
from .verdict import Alternative, Expectation, Judgement, Thresholds, decide

__all__ = ["TWIN_ERROR", "Judge", "max_gpu_used"]

#: The twin's own error on a large copy or collective, as a fraction: within about 10-15% of measured on the
#: recorded H100 / H200 runs (docs/benchmarks.md, model check); it is added to a kind's run-to-run band.
TWIN_ERROR = 0.15

_PAGEABLE = {H2D.key: H2D_PAGEABLE.key, D2H.key: D2H_PAGEABLE.key}
_DEVICE_BUFFERS = {"D D", "DD", "D-D"}
_NO_PEER_CAUSE = "peer access likely off"
_NO_PEER_DECLARED = "peer access was off in this run (as the tool says)"


def _is_gpu(end: Any) -> TypeGuard[int]:
    return isinstance(end, int) and not isinstance(end, bool)


def max_gpu_used(measurements: Sequence[Measurement]) -> int:
    """How many of the tool's GPUs the measurements need: highest GPU index + 1, and the rank count
    of collectives (0 when none)."""
    need = 0
    for m in measurements:
        for end in (m.src, m.dst):
            if _is_gpu(end):
                need = max(need, int(end) + 1)
        for pair in (m.extra or {}).get("transfers") or ():
            for end in pair:
                if _is_gpu(end):
                    need = max(need, int(end) + 1)
        ranks = (m.extra or {}).get("ranks")
        if _is_collective(m) and _is_gpu(ranks):
            need = max(need, int(ranks))
    return need


def _size_unknown(m: Measurement) -> str:
    """Why a rate's size is not known (the parser's ``extra["size_unknown"]``), "" when it is."""
    return str((m.extra or {}).get("size_unknown") or "") if m.bandwidth is not None else ""


def _tuner_env(m: Measurement) -> tuple[tuple[str, str], ...]:
    """The NCCL variables of the run's environment (``check --env``) that NCCL's replayed tuner reads, sorted."""
    env = (m.extra or {}).get("env") or {}
    return tuple(sorted((k, str(v).strip()) for k, v in env.items() if k in nt.TUNER_ENV))


def _is_collective(m: Measurement) -> bool:
    return m.pattern == "collective" and m.method.startswith("nccl.")



#: Inside a node NCCL's slowest transports are P2P through host memory and SHM (the no-P2P alternative); a
#: collective at under a fifth of that went through neither, but through NCCL's network transport (on a node
#: without a NIC NCCL picks, its sockets): 2 x H200, NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 gave 2.0-2.9 GB/s where
#: NCCL_P2P_DISABLE=1 alone gave 23-27 (docs/runs/h200x2-2026-11-28b/call1/broken). A decision, not a fit.
SLOWER_THAN_HOST_MEMORY = 0.2

#: An algorithm/protocol NCCL did not choose is offered as a cause only when it is this much slower than the
#: chosen one (closer ones cannot be told apart from the band around the chosen one).
FORCED_DISTINCT_BELOW = 0.8


def _forced_alternatives(pred: Any, busbw: bool) -> tuple[Alternative, ...]:
    """The algorithms/protocols NCCL's tuner weighed and did not choose (``pred.algorithms``), each a cause
    of a low number: NCCL_ALGO / NCCL_PROTO set by the user (or a tuner plugin) make NCCL run them."""
    chosen = pred.chosen
    rate = chosen.busbw_gb_per_s if busbw else chosen.algbw_gb_per_s
    out = []
    for option in pred.algorithms:
        value = option.busbw_gb_per_s if busbw else option.algbw_gb_per_s
        if option is chosen or not (0 < value < FORCED_DISTINCT_BELOW * rate):
            continue
        setting = []
        if option.algorithm != chosen.algorithm:
            setting.append(f"NCCL_ALGO={option.algorithm}")
        if option.protocol != chosen.protocol:
            setting.append(f"NCCL_PROTO={option.protocol}")
        out.append(Alternative(f"{option.algorithm}/{option.protocol}", value,
                               f"NCCL ran {option.algorithm}/{option.protocol} where its tuner picks "
                               f"{chosen.algorithm}/{chosen.protocol} ({' '.join(setting) or 'a forced choice'} set, "
                               "or a tuner plugin)", f"collective-forced-{option.algorithm}-{option.protocol}".lower()))
    return tuple(out)

class Judge:
    """Expectations and verdicts for measurements taken on ``topology`` (GPUs ``gpus`` of it)."""

    def __init__(self, topology: Topology, *, gpus: Sequence[int] | None = None, params: ModelParams | dict | None = None,
                 calibrated: Topology | None = None, thresholds: Thresholds | None = None,
                 references: ReferenceTable | None = None) -> None:
        self.topology = topology
        self.references = shipped() if references is None else references
        self.gpus = tuple(int(g) for g in gpus) if gpus is not None else tuple(range(topology.gpu_count))
        for g in self.gpus:
            topology.gpu(g)  # an unknown GPU is a clear TopologyError
        self.thresholds = thresholds or Thresholds()
        self.fabric = FabricModel(topology, params, peer_fallback=True)
        self.calibrated = FabricModel(calibrated, peer_fallback=True) if calibrated is not None else None
        if calibrated is not None and calibrated.gpu_count != topology.gpu_count:
            raise TopologyError(f"the calibrated topology {calibrated.name!r} has {calibrated.gpu_count} GPUs, "
                                f"{topology.name!r} has {topology.gpu_count}",
                                hint="calibrate from a run on the same machine (linkscope model calibrate)")
        self._no_peer: dict[tuple[tuple[int, ...], str, int | None, tuple[tuple[str, str], ...]], CollectiveModel] = {}
        self._capped: dict[tuple[int, str, int | None, tuple[tuple[str, str], ...]], CollectiveModel] = {}
        self._node_gpus: list[list[int]] | None = None
        self._collective_cache: dict[tuple, Expectation] = {}
        self._egress_cache: dict[tuple[int, ...], float] = {}

    # ---- GPUs ------------------------------------------------------------------------------------
    def check_fit(self, measurements: Sequence[Measurement], what: str = "the results") -> None:
        """A one-line TopologyError when the measurements use more GPUs than are selected."""
        need = max_gpu_used(measurements)
        if need > len(self.gpus):
            chosen = f"GPUs {','.join(map(str, self.gpus))} of {self.topology.name!r}" if len(self.gpus) < self.topology.gpu_count \
                else f"{self.topology.name!r}"
            raise TopologyError(f"{what} use{'s' if what != 'the results' else ''} {need} GPUs; {chosen} has {len(self.gpus)}",
                                hint="check against a topology with enough GPUs (--preset, --from, --synthetic) or pick "
                                     "them with --gpus")

    def mismatch(self, names: Sequence[str]) -> str:
        """How the GPUs a tool names differ from the selected GPUs' models ("" when they agree or
        either side names no recognisable model): verdicts then compare with another machine."""
        theirs = {t for t in (model_token(n) for n in names) if t}
        mine = {t for t in (model_token(self.topology.gpu(g).name) for g in self.gpus) if t}
        if theirs and mine and theirs != mine:
            return (f"the results ran on {', '.join(sorted(theirs)).upper()}, {self.topology.name!r} has "
                    f"{', '.join(sorted(mine)).upper()}: the verdicts compare them with another machine")
        return ""

    def gpu(self, end: Any) -> Any:
        """The topology's endpoint for a tool's endpoint (GPU index mapped through ``gpus``)."""
        if _is_gpu(end):
            if not 0 <= end < len(self.gpus):
                raise TopologyError(f"GPU {end} of the results is not among the {len(self.gpus)} selected GPUs")
            return self.gpus[end]
        return end

    def _label(self, end: Any) -> str:
        """``GPU3``, or ``GPU3(=4)`` when ``--gpus`` maps the tool's GPU3 onto the topology's GPU4."""
        if not _is_gpu(end):
            return str(end)
        mapped = self.gpus[end] if 0 <= end < len(self.gpus) else end
        return f"GPU{end}" if mapped == end else f"GPU{end}(={mapped})"

    def _short_gpu(self, index: int) -> str:
        name = self.topology.gpu(index).name or "GPU"
        token = model_token(name)
        return token.upper() if token else name

    # ---- subjects --------------------------------------------------------------------------------
    def subject(self, m: Measurement, measured: float | None, unit: str) -> str:
        value = "N/A" if measured is None else (f"{measured:.1f}" if measured >= 10 else f"{measured:.3g}")
        if _is_collective(m):
            op = _op(m)
            try:
                gpus = self._rank_gpus(m)
            except TopologyError:
                gpus = []
            where = ""
            if gpus:
                levels = sorted({query.pair_level(self.topology, gpus[i], gpus[(i + 1) % len(gpus)]).code
                                 for i in range(len(gpus)) if len(gpus) > 1})
                where = f" on {len(gpus)} x {self._short_gpu(gpus[0])}{' ' + '/'.join(levels) if levels else ''}"
            quantity = "busbw" if self._busbw(m) else "algbw"
            place = " in place" if (m.extra or {}).get("inplace") else ""
            return f"{op} {format_size(m.size_bytes)}{place} {quantity} {value} {unit}{where}"
        flow = f"{self._label(m.src)}->{self._label(m.dst)}" if m.src != ALL or m.dst != ALL else "all"
        if m.direction == "bi" and m.src != m.dst:
            flow = f"{self._label(m.src)}<->{self._label(m.dst)}"
            if m.scope == "transfer":
                flow += f" ({self._label(m.src)}->{self._label(m.dst)} while both run)"
        size = " (size unknown)" if _size_unknown(m) else (f" {format_size(m.size_bytes)}" if m.size_bytes else "")
        total = " total" if m.scope == "total" and m.direction == "bi" else ""
        return f"{flow} {m.method}{size}{total} {value} {unit}"

    # ---- expectations ----------------------------------------------------------------------------
    def measured(self, m: Measurement) -> tuple[float | None, str]:
        """The judged value of ``m`` and its unit."""
        if m.bandwidth is not None:
            extra = m.extra or {}
            time_us = extra.get("time_us")
            if _is_collective(m) and _op(m) in OPS and isinstance(time_us, (int, float)) and time_us > 0 and m.size_bytes > 0:
                # from the time: the printed GB/s have two decimals (0.00 at small sizes); nccl-tests
                # computes algbw = size / time the same way (src/common.cu)
                algbw = m.size_bytes / time_us / 1e3
                return (algbw * busbw_factor(_op(m), self._ranks(m)) if self._busbw(m) else algbw), "GB/s"
            if self._busbw(m):
                value = extra["busbw_gb_per_s"]
                return (float(value) if isinstance(value, (int, float)) else None), "GB/s"
            return m.bandwidth.median, "GB/s"
        if m.latency is not None:
            return m.latency.median, "us"
        return None, "GB/s"

    def expect(self, m: Measurement) -> Expectation:
        """What ``m`` should be (a note instead of a prediction when the twin has none)."""
        try:
            if not m.ok:
                return Expectation(note=f"status {m.status.value}{': ' + m.reason if m.reason else ''}")
            if m.bandwidth is None and m.latency is not None:
                return self._latency(m)
            if m.size_bytes == 0 and m.bandwidth is not None:
                return Expectation(note="size 0: nothing was moved")
            if _size_unknown(m):  # a rate depends on its size
                return Expectation(note=_size_unknown(m))
            if _is_collective(m):
                return self._collective(m)
            if m.method.startswith("mpi."):
                return self._mpi(m)
            if m.method in METHODS:
                return self._copy(m, m.method)
            return Expectation(note=f"method {m.method!r} is not modelled")
        except LinkscopeError as exc:
            return Expectation(note=str(exc).rstrip("."))

    def judge(self, m: Measurement) -> Judgement:
        measured, unit = self.measured(m)
        exp = self.expectation(m)
        if exp.unit != unit:
            exp = Expectation(unit=unit, note=exp.note or "the twin predicts another quantity")
        return decide(self.subject(m, measured, unit), measured, exp, self.thresholds)

    def expectation(self, m: Measurement) -> Expectation:
        """What ``m`` is judged against: the reference of its kind where the shipped table has one
        (its median and band), else the twin where the twin can be trusted for it, else a note
        saying why it is not judged."""
        exp = self.expect(m)
        if not m.ok or _size_unknown(m):
            return exp
        try:
            key = self.ref_key(m)
        except LinkscopeError:
            key = None
        # the reference table holds runs under NCCL's defaults: a run launched with tuner variables set is the twin's
        ref = self.references.get(key) if not (_is_collective(m) and _tuner_env(m)) else None
        share = self._flow_share(m)
        if share:
            return replace(exp, twin=None, calibrated=None, note=share)
        if ref is not None and self.calibrated is None:  # a calibration of this very machine goes first
            return self._with_reference(m, exp, ref)
        why = self._untrusted_twin(m, exp, key)
        if why:
            return replace(exp, twin=None, calibrated=None, note=why)
        if key is not None and exp.calibrated is None:
            # the twin's band: the run-to-run spread of numbers of this kind plus the twin's own error
            # (TWIN_ERROR), so always wider than a reference's
            return replace(exp, band=self.references.family_band(key) + TWIN_ERROR)
        return exp

    def _with_reference(self, m: Measurement, exp: Expectation, ref: Reference) -> Expectation:
        alternatives = list(exp.alternatives)
        if exp.unit == "GB/s" and exp.route and m.method in PEER_METHODS and ref.key.pattern == "pair":
            alternatives.append(self._half_link(m, ref))
        if exp.unit == "GB/s" and ref.key.direction == "flow":  # judged only where fairness is the claim (a ring)
            alternatives.append(Alternative("the flow's link at half (shared with other traffic, or degraded)", ref.median / 2,
                                            "this flow is slow where the others of the pattern are not: a noisy neighbour "
                                            "on its link, or the link degraded", "slow-flow"))
        if exp.unit == "GB/s" and ref.key.direction == "total" and m.scope == "total":
            slow = self._slow_flow(m, ref)
            if slow is not None:
                alternatives.append(slow)
        text = f"{ref.provenance()}; band {ref.band_from}"
        one_sided = ""
        if host_decided(ref.key):
            hosts = len(ref.leases)
            one_sided = (f"faster than the {hosts} host{'s' if hosts != 1 else ''} the reference saw; the host (its CPU, memory, "
                         "PCIe root complex, IOMMU) decides this copy, not the GPU, so a faster host is no fault")
        exp = replace(exp, reference=ref.median, band=ref.band, reference_text=text, alternatives=tuple(alternatives),
                      one_sided=one_sided)
        return replace(exp, bound_note=self._bound_note(m, exp, ref.key) or exp.bound_note)

    @staticmethod
    def _half_link(m: Measurement, ref: Reference) -> Alternative:
        """One pair at half: links of the bond down (NVLink) or a PCIe path trained down, which is steady; or
        the link shared with other traffic (a noisy neighbour), which makes the repetitions spread. A record
        with repetitions (n >= 3) tells them apart: a spread (CV) beyond the reference's band is contention;
        an output that prints one number per copy (nvbandwidth) cannot, and the cause names both."""
        label = "the pair's link at half (links down, trained down, or shared with other traffic)"
        stats = m.bandwidth
        cv = stats.cv if stats is not None and stats.n >= 3 and isinstance(stats.cv, float) else None
        if cv is not None and cv > ref.band:
            return Alternative(label, ref.median / 2, f"the pair's link is shared with other traffic (a noisy neighbour or "
                               f"a concurrent job on these GPUs): its repetitions spread (CV {cv:.0%}, more than the "
                               f"{ref.band:.0%} band), where a link trained down is steady (linkscope watch shows the "
                               "other traffic)", "shared-link")
        if cv is not None:
            return Alternative(label, ref.median / 2, f"the pair's link is likely degraded, steady at half (CV {cv:.1%}): "
                               "links down or trained down (nvidia-smi nvlink -s, lspci -vv LnkSta); a neighbour "
                               "copying without pause is steady too (survey's background check, watch)", "link-degraded")
        return Alternative(label, ref.median / 2, "the pair's link at half: degraded (links down or trained down: "
                           "nvidia-smi nvlink -s, lspci -vv LnkSta) or shared with other traffic (a noisy neighbour: "
                           "linkscope watch shows it); this output prints one number per copy, so it cannot tell them "
                           "apart", "link-degraded-or-shared")

    # ---- references ------------------------------------------------------------------------------
    def launch(self, m: Measurement) -> str:
        """How a collective was launched, as the reference key says it: ``graph`` or ``eager`` and the
        GPUs one thread drove (``eager 4/thread``), from nccl-tests' header (``nThread``, ``nGpus``,
        ``graph:``), a linkscope record (``cuda_graph``, devices per process), or for a table pasted without its
        header ``check --launch`` else nccl-tests' default (eager: the reader's ``launch``); "" when unknown."""
        extra = m.extra or {}
        graph = extra.get("graph_iters")
        if "cuda_graph" in extra:  # a linkscope bench nccl entry
            mode = "eager" if extra.get("cuda_graph") is False else "graph"
        elif _is_gpu(graph):
            # nccl-tests -G N: the graph's first launch uploads it inside the timed loop, and the time is
            # divided by iters x N (src/common.cu 2.19.6: tim.reset() after cudaGraphInstantiate, then
            # deltaSec / (iters * agg_iters) / cudaGraphLaunches): with one launch the upload is in every
            # small size's time (1 x H200: 3.05 us at 8 B with -G 1, 0.98 with -G 20), so it is its own mode
            mode = "eager" if graph <= 0 else ("graph x1" if graph == 1 else "graph")
        elif extra.get("launch") in ("eager", "graph"):  # a table without its header: check --launch, or the default
            mode = extra["launch"]
        else:
            return ""
        per = extra.get("gpus_per_thread")
        if not _is_gpu(per):
            per = extra.get("gpus_per_process")
        return f"{mode} {int(per)}/thread" if _is_gpu(per) and per > 0 else mode

    def _gpu_token(self, gpus: Sequence[int]) -> str | None:
        tokens = {model_token(self.topology.gpu(g).name or "") for g in gpus}
        if None in tokens or not tokens:
            return None
        return "+".join(sorted(t for t in tokens if t))

    @staticmethod
    def _determined_by(key: RefKey | None) -> RefKey | None:
        """``key`` keyed by what decides its number: a latency, or a copy the host decides
        (``references.host_decided``), by the GPUs' latency class in the facts table (``hopper``: H100
        and H200 are one die, GH100, with one NVLink and copy-engine design; the SKU differs in memory,
        which neither touches), so every lease of the class is one population and its spread between
        leases is seen; other keys (and GPUs without a class) keep the model token."""
        if key is None or not (key.unit == "us" or host_decided(key)):
            return key
        classes = {getattr(gpu_facts(t), "latency_class", None) for t in key.gpu.split("+")}
        if len(classes) != 1 or None in classes:
            return key
        return replace(key, gpu=str(classes.pop()))

    def _host_link(self, gpu: int) -> str:
        """The class of a GPU's host link: its generation (``PCIe Gen5 x16``), else kind and GB/s."""
        device = self.fabric.gpu(gpu)
        cpu = self.fabric.router.local_cpu(device)
        links = query.route(self.topology, cpu, device)
        if not links:
            return "host"
        narrow = min(links, key=lambda link: link.capacity_gb_per_s)
        return f"host {narrow.generation}" if narrow.generation else f"host {narrow.kind.value} {narrow.capacity_gb_per_s:.0f}"

    def _ring_levels(self, gpus: Sequence[int]) -> str:
        levels = sorted({query.pair_level(self.topology, gpus[i], gpus[(i + 1) % len(gpus)]).code
                         for i in range(len(gpus))}) if len(gpus) > 1 else ["-"]
        return f"{len(gpus)}x{'/'.join(levels)}"

    def ref_key(self, m: Measurement) -> RefKey | None:
        """The reference key of ``m`` (None when it has no kind references are kept for)."""
        return self._determined_by(self._model_key(m))

    def _model_key(self, m: Measurement) -> RefKey | None:
        extra = m.extra or {}
        size = int(m.size_bytes)
        if _is_collective(m):
            gpus = self._rank_gpus(m)
            token = self._gpu_token(gpus)
            unit = "busbw GB/s" if self._busbw(m) else "algbw GB/s"
            if m.bandwidth is None:
                return None
            place = "in-place" if extra.get("inplace") else "out-of-place"  # one rank in place moves nothing
            return None if token is None else RefKey(token, self._ring_levels(gpus), m.method, "collective", place, size,
                                                     self.launch(m), unit)
        if m.bandwidth is None and m.latency is not None:
            kind = extra.get("latency_kind")
            if kind not in ("remote-read", "flag-pingpong", "host-read", "copy"):
                return None
            a, b = self.gpu(m.src), self.gpu(m.dst)
            gpus = [g for g in (a, b) if _is_gpu(g)]
            token = self._gpu_token(gpus)
            if token is None:
                return None
            if kind == "host-read" or not all(_is_gpu(g) for g in (a, b)):
                link = self._host_link(gpus[0])
            else:
                link = query.pair_level(self.topology, a, b).code if a != b else "local"
            what = f"latency.{kind}" + (f" {m.method}" if kind == "copy" else "")
            return RefKey(token, link, what, "pair", "uni", size if kind == "copy" else 0, "", "us")
        if m.bandwidth is None:
            return None
        method = m.method
        if method.startswith("mpi."):
            buffers = str(extra.get("buffers", "")).strip().upper().replace("-", " ")
            if m.src == ALL or m.dst == ALL:
                return None
            a, b = self.gpu(m.src), self.gpu(m.dst)
            if self._hosts(m) > 1 and _is_gpu(a) and _is_gpu(b):
                a, b = self._network_ends()
            token = self._gpu_token([g for g in (a, b) if _is_gpu(g)])
            if token is not None and _is_gpu(a) != _is_gpu(b):  # one end in host memory (pageable: see _mpi_host)
                link = self._host_link(a if _is_gpu(a) else b)
                return RefKey(token, link, f"{method} {buffers} (pageable host buffer)", "pair",
                              "bi-total" if method.endswith("bibw") else "uni", size, "", "GB/s")
            if token is None or not (_is_gpu(a) and _is_gpu(b)):
                return None
            return RefKey(token, query.pair_level(self.topology, a, b).code, f"{method} {buffers}".strip(), "pair", "uni", size,
                          "", "GB/s")
        if method not in METHODS:
            return None
        flows, target = self._transfers(m)
        gpus = sorted({g for f in flows for g in f if _is_gpu(g)})
        token = self._gpu_token(gpus)
        if token is None:
            return None
        if extra.get("counts_read_and_write") and method == LOCAL.key:
            method = f"{method} (read+write)"
        pair = set(flows) <= {flows[0], flows[0][::-1]}
        if not pair:
            ends = sorted({g for f in flows for g in f if _is_gpu(g)})
            host = any(HOST in f for f in flows)
            link = self._ring_levels(ends) + (" +host" if host else "")
            return RefKey(token, link, method, m.pattern, "flow" if target is not None else "total", size, "", "GB/s")
        first = target or flows[0]
        if method == CE.key and HOST in first:  # the copy engine's copy with a host end is h2d or d2h (nvbandwidth's name)
            method = H2D.key if first[0] == HOST else D2H.key
        if method == LOCAL.key or first[0] == first[1]:
            link = "local"
        elif HOST in first:
            link = self._host_link(first[1] if first[0] == HOST else first[0])
        else:
            link = query.pair_level(self.topology, first[0], first[1]).code
        direction = "uni" if len(set(flows)) == 1 else ("bi" if target is not None else "bi-total")
        return RefKey(token, link, method, "pair", direction, size, "", "GB/s")

    def engine_queue(self, m: Measurement) -> int:
        """The most copies of ``m``'s concurrent group that one GPU's copy engines serve (the issuing GPU: the
        source, or the destination of a copy it reads, ``Method.issuer``), for a copy-engine method between
        GPUs; 0 otherwise. Above 1 the copies queue on that GPU's engines in an order the driver picks, which
        changes between runs (docs/benchmarks.md "The mechanism on 2 GPUs"), and the group's total with it."""
        if m.method not in METHODS or get_method(m.method).unit != "copy-engine" or m.bandwidth is None:
            return 0
        try:
            flows, _ = self._transfers(m)
        except LinkscopeError:
            return 0
        dst_issues = get_method(m.method).issuer == "dst"
        issuers = [b if dst_issues else a for a, b in flows if _is_gpu(a) and _is_gpu(b) and a != b]
        return max((issuers.count(g) for g in set(issuers)), default=0)

    def _flow_share(self, m: Measurement) -> str:
        """Why one flow of a concurrent pattern is not judged ("" when it is): its share of links and
        copy engines shared with the other flows is not a claim; only where the twin says no flow
        shares a bottleneck (a ring on a switch: each flow alone on its links) is fairness the claim."""
        if m.scope != "transfer" or m.bandwidth is None or _is_collective(m) or m.method not in METHODS:
            return ""
        flows, target = self._transfers(m)
        if target is None or set(flows) <= {target, target[::-1]}:
            return ""
        alone = self._predicted(self.fabric, m, [target], target, m.method)[0]
        together = self._predicted(self.fabric, m, flows, target, m.method)[0]
        independent = alone > 0 and together >= 0.95 * alone
        if independent and len({f[0] for f in flows}) == len(flows):  # a ring: one copy per GPU, links not shared
            return ""
        # a GPU kernel given its own compute units (TransferBench's subexecutors: each Transfer runs on the
        # CUs it names, src/TransferBench.cpp v1.52 PrepareGpuKernel), so its flows share no SMs either
        dedicated = bool((m.extra or {}).get("subexecutors")) and get_method(m.method).unit != "copy-engine"
        if independent and dedicated:
            return ""
        return (f"one flow of a concurrent {m.pattern} ({len(flows)} flows share links and copy engines): its share is "
                "not a claim (the pattern's total is judged where the output has one)")

    def _untrusted_twin(self, m: Measurement, exp: Expectation, key: RefKey | None) -> str:
        """Why the twin is not trusted for ``m`` when there is no reference ("" when it is)."""
        if exp.expected is None:
            return ""
        what = f"no reference for {key.text()}" if key is not None else "no reference for it"
        if exp.calibrated is None and exp.fixed_share is not None and exp.fixed_share > self.thresholds.latency_bound:
            return (f"{what}, and the twin is latency-bound at this size ({exp.fixed_share:.0%} of its time is fixed cost "
                    "it has not calibrated on this machine)")
        overhead = f"overhead_us.{m.method}"
        if exp.unit == "us" and exp.calibrated is None and (m.extra or {}).get("latency_kind") == "copy" \
                and self.fabric.params.is_default(overhead) and self.fabric.params.provenance.get(overhead) == "default":
            return (f"{what}, and the twin's per-copy overhead of {m.method} "
                    f"({self.fabric.params.values.get(overhead):g} us) is an assumption, not a measurement")
        if m.method == CE.key and m.scope == "total" and len((m.extra or {}).get("transfers") or ()) > 2:
            links = self._rate(self.fabric, m, *self._transfers(m), SM_PUSH.key)
            return (f"{what}, and the twin models the links, not how the copy engines schedule "
                    f"{len((m.extra or {}).get('transfers') or ())} concurrent copies (the links carry {links:.0f})")
        return ""

    def _gpus_of(self, m: Measurement) -> list[int]:
        if _is_collective(m):
            try:
                return self._rank_gpus(m)
            except TopologyError:
                return []
        ends = [m.src, m.dst] + [e for pair in (m.extra or {}).get("transfers") or () for e in pair]
        return sorted({self.gpu(e) for e in ends if _is_gpu(e) and 0 <= e < len(self.gpus)})

    def _bound_note(self, m: Measurement, exp: Expectation, key: RefKey) -> str:
        """``copy-engine bound, the links carry N`` for a copy-engine concurrent total whose sm-push
        twin (reference where there is one, else the twin) is more than the band above it."""
        if m.method != CE.key or key.direction != "total":
            return ""
        ce = exp.reference if exp.reference is not None else exp.expected
        sm_ref = self.references.get(replace(key, quantity=SM_PUSH.key))
        try:
            sm = sm_ref.median if sm_ref is not None else self._rate(self.fabric, m, *self._transfers(m), SM_PUSH.key)
        except LinkscopeError:
            return ""
        band = exp.band if exp.band is not None else self.thresholds.high_above - 1
        if ce is None or sm <= ce * (1 + band):
            return ""
        return f"copy-engine bound, the links carry {sm:.0f} ({'sm-push reference' if sm_ref else 'sm-push twin'})"

    def _slow_flow(self, m: Measurement, ref: Reference) -> Alternative | None:
        """A concurrent total made low by one flow (``extra["flow_gb_per_s"]``: each flow's rate): the
        slowest flow is well below the others (a noisy neighbour on its link, or the link)."""
        rates = [(a, b, float(v)) for a, b, v in (m.extra or {}).get("flow_gb_per_s") or () if isinstance(v, (int, float))]
        if len(rates) < 3:
            return None
        ordered = sorted(r[2] for r in rates)
        median = ordered[len(ordered) // 2]
        a, b, slowest = min(rates, key=lambda r: r[2])
        if slowest <= 0 or median / slowest < (1 + ref.band) ** 2:
            return None
        measured = m.bandwidth.median if m.bandwidth is not None else None
        return Alternative(f"the group held back by its slowest flow {self._label(a)}->{self._label(b)}",
                           measured if measured else slowest,
                           f"one flow is slow ({self._label(a)}->{self._label(b)} {slowest:.0f} GB/s where the median flow "
                           f"runs {median:.0f}): a noisy neighbour on that link, or the link degraded", "slow-flow")

    # collectives
    def _busbw(self, m: Measurement) -> bool:
        """Judge busbw (nccl-tests' per-link number) where the entry has it and there is more than one
        rank (on one rank busbw is 0 by definition: the factor 2(n-1)/n); else algbw."""
        return _is_collective(m) and "busbw_gb_per_s" in (m.extra or {}) and self._ranks(m) > 1

    def _rank_gpus(self, m: Measurement) -> list[int]:
        """The topology GPU of each rank: ``extra["rank_gpus"]`` (the tool's GPU numbers, e.g. from a
        linkscope record's options) mapped through ``gpus``, else the first ``ranks`` selected GPUs."""
        ranks = self._ranks(m)
        listed = (m.extra or {}).get("rank_gpus")
        if isinstance(listed, list) and len(listed) == ranks and all(_is_gpu(g) for g in listed):
            return [int(self.gpu(g)) for g in listed]
        if self._hosts(m) > 1:
            return self._spread(ranks, self._hosts(m))
        if ranks > len(self.gpus):
            raise TopologyError(f"{ranks} ranks, {len(self.gpus)} GPUs selected")
        return list(self.gpus[:ranks])

    def _hosts(self, m: Measurement) -> int:
        """How many hosts the run spanned (``extra["hosts"]``: the output's or ``check --hosts``), 1 when unsaid."""
        hosts = (m.extra or {}).get("hosts")
        return int(hosts) if _is_gpu(hosts) and hosts > 1 else 1

    def _nodes(self) -> list[list[int]]:
        """The topology's GPUs (indices) node by node, in the order of their first GPU: one list for a
        single node, one per node of a ``cluster:`` / ``fattree:`` topology (query.node_labels)."""
        if self._node_gpus is None:
            labels = query.node_labels(self.topology)
            index = {d.id: k for k, d in enumerate(self.topology.devices)}
            groups: dict[int, list[int]] = {}
            for g, device in enumerate(self.topology.gpus):
                groups.setdefault(int(labels[index[device.id]]), []).append(g)
            self._node_gpus = list(groups.values())
        return self._node_gpus

    def _node_of(self, gpu: int) -> int:
        return next(k for k, node in enumerate(self._nodes()) if gpu in node)

    def _spread(self, ranks: int, hosts: int) -> list[int]:
        """The topology GPU of each rank of a run over ``hosts`` hosts: the same number of ranks on each
        host, in blocks (rank r on host r // per-host, its local GPU r % per-host: mpirun's and srun's
        default block placement, each local rank on the GPU of its number)."""
        nodes = self._nodes()
        hint = "judge it against a topology of as many nodes (--synthetic cluster:PRESET:NODES)"
        if hosts > len(nodes):
            raise TopologyError(f"the run spans {hosts} hosts; {self.topology.name!r} has {len(nodes)} node"
                                f"{'s' if len(nodes) != 1 else ''}", hint=hint)
        if ranks % hosts:
            raise TopologyError(f"{ranks} ranks over {hosts} hosts: not as many on each host", hint=hint)
        per = ranks // hosts
        if per > min(len(n) for n in nodes[:hosts]):
            raise TopologyError(f"{per} ranks per host; a node of {self.topology.name!r} has {min(len(n) for n in nodes)} GPUs",
                                hint=hint)
        return [nodes[r // per][r % per] for r in range(ranks)]

    def _ranks(self, m: Measurement) -> int:
        ranks = (m.extra or {}).get("ranks")
        return int(ranks) if _is_gpu(ranks) and ranks > 0 else len(self.gpus)

    def _collective(self, m: Measurement) -> Expectation:
        op = _op(m)
        if op not in OPS:
            return Expectation(note=f"collective {op!r} is not modelled (modelled: {', '.join(OPS)})")
        ranks = self._ranks(m)
        gpus = self._rank_gpus(m)
        busbw = self._busbw(m)
        launch = "eager" if self.launch(m).startswith("eager") else "graph"
        per = (m.extra or {}).get("gpus_per_thread")  # nccl-tests -g: the GPUs one thread launches for (eager host time)
        per_thread = int(per) if _is_gpu(per) and per >= 1 else None
        env = _tuner_env(m)
        key = (op, tuple(gpus), m.size_bytes, busbw, launch, per_thread, env)  # in-place and out-of-place rows share it
        found = self._collective_cache.get(key)
        if found is None:
            found = self._collective_cache[key] = self._predict_collective(op, ranks, gpus, m.size_bytes, busbw, launch,
                                                                           per_thread, env)
        return found

    def _predict_collective(self, op: str, ranks: int, gpus: list[int], size_bytes: int, busbw: bool,
                            launch: str = "graph", per_thread: int | None = None,
                            env: tuple[tuple[str, str], ...] = ()) -> Expectation:
        """The twin's collective as the run launched it, with the NCCL variables of its environment
        (``check --env``: NCCL_ALGO, NCCL_PROTO, NCCL_GRAPH_REGISTER, channel caps... as the replayed tuner
        reads them)."""

        def value(model: CollectiveModel) -> tuple[float, str]:
            pred = model.predict(op, gpus, size_bytes)
            chosen = pred.chosen
            how = [chosen.algorithm] + [str(getattr(chosen, k)) for k in ("protocol",) if getattr(chosen, k, None)]
            if "nvls" not in chosen.algorithm.lower():
                how.append("NVLS off")  # linkscope keeps NVLink SHARP off (NCCL_NVLS_ENABLE=0, ARCHITECTURE.md)
            return (chosen.busbw_gb_per_s if busbw else chosen.algbw_gb_per_s), ", ".join(how)

        chosen_model = CollectiveModel(self.calibrated if self.calibrated is not None else self.fabric, dict(env),
                                       launch=launch, gpus_per_thread=per_thread)
        twin_model = CollectiveModel(self.fabric, dict(env), launch=launch, gpus_per_thread=per_thread)
        twin, detail = value(twin_model)
        twin_pred = twin_model.predict(op, gpus, size_bytes)
        forced = _forced_alternatives(twin_pred, busbw)
        forced += self._channel_alternatives(op, gpus, size_bytes, busbw, launch, twin_pred.chosen, per_thread, env)
        detail += f", {launch} launch"
        calibrated = value(chosen_model)[0] if self.calibrated is not None else None
        floor_us = chosen_model.predict(op, gpus, 0).time_us  # launch and route latencies: the fixed part
        full_us = chosen_model.predict(op, gpus, size_bytes).time_us
        # (the floor may take another algorithm or protocol than the size does: at most all of it)
        fixed_share = min(floor_us / full_us, 1.0) if full_us > 0 else None
        theoretical = None
        one_node = len({self._node_of(g) for g in gpus}) == 1
        if ranks > 1 and one_node:  # across nodes, one channel per NIC and the algorithm decide: the twin carries it
            bound = self._egress_gb_per_s(tuple(gpus))
            theoretical = bound if busbw else bound / max(busbw_factor(op, ranks), 1e-9)
        alternatives: tuple[Alternative, ...] = ()
        if (ranks > 1 and one_node and any(self.fabric.peer_access(a, b) is None for a in gpus for b in gpus if a != b)
                and self._host_route_apart(tuple(gpus))):
            alt = value(self._no_peer_model(tuple(gpus), launch, per_thread, env))[0]
            alternatives = (Alternative("the same collective through host memory (no P2P)", alt,
                                        "NCCL ran without peer-to-peer (NCCL_P2P_DISABLE, or peer access unavailable)",
                                        "collective-no-p2p"),
                            Alternative("a fifth of what NCCL's slowest path inside a node (through host memory) gives",
                                        alt * SLOWER_THAN_HOST_MEMORY,
                                        "NCCL went through its network transport (sockets) between GPUs of one node: "
                                        "NCCL_P2P_DISABLE and NCCL_SHM_DISABLE set, or the ranks did not see each other "
                                        "as one node (containers without a shared /dev/shm or IPC namespace)",
                                        "collective-network-transport", upto=True))
        alternatives += forced
        if ranks > 1 and twin > 0:
            alternatives += (Alternative("the links at half their rate", twin / 2,
                                         "the links ran at half their rate for the whole run: shared with another load "
                                         "(a noisy neighbour, a concurrent job) or half of them down (nvidia-smi nvlink -s); "
                                         "nccl-tests prints one number per size, so it cannot tell them apart (linkscope "
                                         "survey's background check and watch can)", "collective-half-rate"),)
        return Expectation("GB/s", theoretical, twin, calibrated, "", detail, alternatives, fixed_share=fixed_share)

    def _egress_gb_per_s(self, gpus: tuple[int, ...]) -> float:
        """The bound on a one-node collective's busbw: the least of its GPUs' egress towards the other ranks
        (query.egress_gb_per_s). busbw is what each rank sends per second (nccl-tests PERFORMANCE.md: the
        factor makes it the per-rank wire rate of a ring), and the library may run several rings at once
        over different links (RCCL on a full xGMI mesh: one per link-disjoint Hamiltonian cycle, rome_model_79
        in model.rccl; NCCL's search: as many rings as the NVLinks carry), so no rank can send faster than
        all its links to the others together, whatever the rings. A ring-order pair bound would read a mesh
        run as seven times too fast."""
        found = self._egress_cache.get(gpus)
        if found is None:
            found = self._egress_cache[gpus] = min(
                query.egress_gb_per_s(self.topology, g, [h for h in gpus if h != g]) for g in set(gpus))
        return found

    def _channel_alternatives(self, op: str, gpus: list[int], size_bytes: int, busbw: bool, launch: str,
                              chosen: Any, per_thread: int | None = None,
                              env: tuple[tuple[str, str], ...] = ()) -> tuple[Alternative, ...]:
        """The collective capped at fewer channels than NCCL's tuner gives it (NCCL_MAX_NCHANNELS, or
        NCCL_MIN_NCHANNELS/a tuner plugin capping it), at each power of two below the chosen count."""
        out = []
        rate = chosen.busbw_gb_per_s if busbw else chosen.algbw_gb_per_s
        cap = 1
        while cap < chosen.channels:
            model = self._capped.get((cap, launch, per_thread, env))
            if model is None:
                model = self._capped[(cap, launch, per_thread, env)] = CollectiveModel(
                    self.fabric, {**dict(env), "NCCL_MAX_NCHANNELS": str(cap)}, launch=launch, gpus_per_thread=per_thread)
            capped = model.predict(op, gpus, size_bytes).chosen
            value = capped.busbw_gb_per_s if busbw else capped.algbw_gb_per_s
            if 0 < value < FORCED_DISTINCT_BELOW * rate:
                out.append(Alternative(f"{cap} channel{'s' if cap > 1 else ''}", value,
                                       f"NCCL ran on {cap} channel{'s' if cap > 1 else ''} where its tuner gives "
                                       f"{chosen.channels} (NCCL_MAX_NCHANNELS={cap} or a tuner plugin capping it)",
                                       f"collective-forced-channels-{cap}"))
            cap *= 2
        return tuple(out)

    def _host_route_apart(self, gpus: tuple[int, ...]) -> bool:
        """Whether host memory is a path of its own between these GPUs: no GPU's host route (to its
        CPU, then from that CPU to a peer) crosses another GPU. Where it does (Grace CPUs of an NVL72
        rack reach the other trays' GPUs only over C2C and the NVLink fabric), "without P2P" is not a
        slower path through host memory and names no cause."""
        for a in gpus:
            cpu = query.local_cpu(self.topology, self.topology.gpu(a))
            if cpu is None:
                return False
            for b in gpus:
                if b != a and any(self.topology.by_id[d].is_gpu
                                  for d in query.route_devices(self.topology, cpu.id, self.topology.gpu(b).id)[1:-1]):
                    return False
        return True

    def _no_peer_model(self, gpus: tuple[int, ...], launch: str, per_thread: int | None = None,
                       env: tuple[tuple[str, str], ...] = ()) -> CollectiveModel:
        """The twin of these GPUs without peer access between them, launched as the run was (eager or graph)
        and with the judge's parameters: only the transport differs from the run's own twin."""
        found = self._no_peer.get((gpus, launch, per_thread, env))
        if found is None:
            denied = tuple((a, b) for a in gpus for b in gpus if a < b)
            peer = replace(self.topology.peer_access, denied_pairs=self.topology.peer_access.denied_pairs + denied)
            found = self._no_peer[(gpus, launch, per_thread, env)] = CollectiveModel.of(
                self.topology.replace(peer_access=peer), self.fabric.params, dict(env), launch=launch,
                gpus_per_thread=per_thread)
        return found

    # copies
    def _transfers(self, m: Measurement) -> tuple[list[tuple[Any, Any]], tuple[Any, Any] | None]:
        """The concurrent transfers behind ``m`` (topology endpoints) and the one ``m`` measures
        (None when ``m`` is their total)."""
        listed = (m.extra or {}).get("transfers")
        single = m.src != ALL and m.dst != ALL
        a = self.gpu(m.src) if single else None
        b = (self.gpu(m.dst) if m.method != LOCAL.key else a) if single else None
        if listed:
            flows = [(self.gpu(x), self.gpu(y)) for x, y in listed]
        elif not single:
            raise TopologyError("an aggregate without its transfers")
        elif m.direction == "bi" and m.src != m.dst:
            flows = [(a, b), (b, a)]
        else:
            flows = [(a, b)]
        target = (a, b) if single and m.scope == "transfer" else None
        if target is not None and target not in flows:
            flows = [target] + flows
        return flows, target

    def _rate(self, model: FabricModel, m: Measurement, flows: list[tuple[Any, Any]], target: tuple[Any, Any] | None,
              method: str) -> float:
        """GB/s of ``m``: its own transfer's rate, or the total (bytes / the slowest) of all."""
        if method in HOST_METHODS and any(x == HOST for x, _ in flows) and any(y == HOST for _, y in flows):
            method = CE.key  # both directions at once: the copy engine's copy with a host end is h2d or d2h
        return self._predicted(model, m, flows, target, method)[0]

    def _predicted(self, model: FabricModel, m: Measurement, flows: list[tuple[Any, Any]], target: tuple[Any, Any] | None,
                   method: str) -> tuple[float, float | None]:
        """(GB/s of ``m``, the share of its predicted time that is fixed cost: overhead and latency)."""
        if method in HOST_METHODS and any(x == HOST for x, _ in flows) and any(y == HOST for _, y in flows):
            method = CE.key
        preds = model.predict([(x, y, m.size_bytes) for x, y in flows], method)
        if target is not None:
            p = next(p for p in preds if (p.src, p.dst) == target)
            return p.gb_per_s, (p.latency_us * 1e-6 / p.elapsed_s if p.elapsed_s > 0 else None)
        slowest = max(preds, key=lambda p: p.elapsed_s)
        elapsed = group_elapsed_s(preds)  # copies queued on copy engines: the median order's time, not the slowest mean
        if elapsed <= 0:
            return 0.0, None
        return sum(p.size_bytes for p in preds) / elapsed / 1e9, slowest.latency_us * 1e-6 / elapsed

    def _copy(self, m: Measurement, method: str) -> Expectation:
        flows, target = self._transfers(m)
        if method == LOCAL.key:  # the device's memory is the bound: only the GPU model's facts say what it is
            for x, _ in flows:
                device = self.fabric.gpu(x)
                if facts_of_device(device) is None and "memory_bw_gb_per_s" not in (device.attributes or {}) \
                        and self.fabric.params.is_default("device_memory_bw_gb_per_s"):
                    return Expectation(note=no_facts_reason(device.name))
        declared_off = (m.extra or {}).get("peer_access") is False
        twin, fixed_share = self._predicted(self.fabric, m, flows, target, method)
        calibrated = None
        if self.calibrated is not None:
            calibrated, fixed_share = self._predicted(self.calibrated, m, flows, target, method)
        if (m.extra or {}).get("counts_read_and_write") and method == LOCAL.key:  # the tool counts read + write
            twin, calibrated = 2 * twin, (2 * calibrated if calibrated is not None else None)
        first = target or flows[0]
        route, theoretical = "", None
        gpu_pair = all(_is_gpu(e) for e in first) and first[0] != first[1]
        staged = gpu_pair and method == CE_NOPEER.key
        if gpu_pair:
            route = query.pair_level(self.topology, first[0], first[1]).code
            route = f"host-staged ({route} pair)" if staged else route
        if (gpu_pair or HOST in first) and method != LOCAL.key:
            if HOST in first or staged:  # a staged copy crosses both GPUs' host links
                ends = [e for e in first if e != HOST]
                bound = min(query.theoretical_gb_per_s(self.topology, self.fabric.router.local_cpu(self.fabric.gpu(e)),
                                                       self.fabric.gpu(e)) for e in ends)
            else:
                bound = query.theoretical_gb_per_s(self.topology, first[0], first[1])
            if target is not None:
                theoretical = bound
            elif m.direction == "bi" and len(flows) == 2 and set(flows) == {first, first[::-1]}:
                theoretical = 2 * bound
        detail = method
        alternatives: list[Alternative] = []
        if gpu_pair and method in PEER_METHODS:
            a, b = first
            if self.fabric.peer_access(a, b) is not None:
                detail = f"{method}; no peer access in the topology: the driver stages through host memory"
            elif all(_is_gpu(x) and _is_gpu(y) for x, y in flows):
                alt = self._rate(self.fabric, m, flows, target, CE_NOPEER.key)
                alternatives.append(Alternative("PCIe staging through host memory", alt,
                                                _NO_PEER_DECLARED if declared_off else _NO_PEER_CAUSE, "no-peer-access"))
        if method in _PAGEABLE and all(HOST in f for f in flows) and len({f[0] == HOST for f in flows}) == 1:
            alternatives.append(Alternative("pageable (not pinned) host memory",
                                            self._rate(self.fabric, m, flows, target, _PAGEABLE[method]),
                                            "host buffer likely pageable (not pinned)", "pageable-host-memory"))
        if HOST in first and not get_method(method).pageable:  # a pageable copy is bound by the host memcpy, not the link
            alternatives.append(Alternative("a host link at half its PCIe width or generation", twin / 2,
                                            "the GPU's PCIe link likely trained down (check lspci -vv LnkSta)",
                                            "pcie-link-degraded"))
        plausible = None
        if method == LOCAL.key and _is_gpu(first[0]):  # a local copy reads and writes: at most half the memory bandwidth
            facts = facts_of_device(self.topology.gpu(first[0]))
            if facts is not None and facts.memory_bw_gb_per_s:
                plausible = facts.memory_bw_gb_per_s * (1.0 if (m.extra or {}).get("counts_read_and_write") else 0.5)
        return Expectation("GB/s", theoretical, twin, calibrated, route, detail, tuple(alternatives), fixed_share=fixed_share,
                           plausible_max=plausible)

    def _mpi(self, m: Measurement) -> Expectation:
        buffers = str((m.extra or {}).get("buffers", "")).strip().upper()
        test = m.method.split(".", 1)[1]
        if test not in ("bw", "bibw"):
            return Expectation(note=f"MPI {test} is not modelled")
        if m.src == ALL or m.dst == ALL:
            return Expectation(note="an aggregate over several pairs is not modelled")
        if self._hosts(m) > 1:
            return self._mpi_network(m, test, buffers)
        if buffers not in _DEVICE_BUFFERS:
            return self._mpi_host(m, test, buffers)
        # OSU keeps a window of 64 messages in flight (osu_bw.c), but CUDA-aware MPI copies them one
        # after another on the copy engine (each pays its fixed cost: about 3-4 us per message measured
        # on 2 x H100, tests/fixtures/peertools/h100x2/osu-DD.txt), so one copy is the twin's unit
        bi = m.with_(direction="bi", scope="total") if test == "bibw" else m
        return self._copy(bi, self._runtime_copy(m))

    def _runtime_copy(self, m: Measurement) -> str:
        """The method of a GPU-aware MPI's device-to-device copy (hipMemcpy / cudaMemcpy): the copy engine,
        or the runtime's blit kernels where the run's environment (``check --env``) is the one the method
        table gives ce-blit for the GPUs' vendor (``HSA_ENABLE_SDMA=0`` on ROCm): not held to one DMA
        engine's rate then."""
        env = {k: str(v).strip() for k, v in ((m.extra or {}).get("env") or {}).items()}
        ends = [e for e in (m.src, m.dst) if _is_gpu(e)]
        needs = [CE_BLIT.env.get(self.fabric.gpu(self.gpu(e)).vendor or "") for e in ends]
        blit = bool(needs) and all(n and all(env.get(k) == v for k, v in n.items()) for n in needs)
        return CE_BLIT.key if blit else CE.key

    def _network_ends(self) -> tuple[int, int]:
        """The GPUs of a two-host point-to-point run: local rank 0's GPU on the first two nodes."""
        nodes = self._nodes()
        if len(nodes) < 2:
            raise TopologyError(f"the run spans several hosts; {self.topology.name!r} is one node",
                                hint="judge it against a topology of as many nodes (--synthetic cluster:PRESET:NODES)")
        return nodes[0][0], nodes[1][0]

    def _mpi_network(self, m: Measurement, test: str, buffers: str) -> Expectation:
        """An MPI bandwidth between GPU buffers on two hosts: the route GPU -> PCIe -> NIC -> network ->
        NIC -> PCIe -> GPU with GPUDirect RDMA (the NIC reads and writes GPU memory), its bottleneck the
        narrowest of NIC line rate and the PCIe links to the NICs (the twin; query.theoretical_gb_per_s).
        Alternatives: the buffers staged through pageable host memory one hop after another (no
        GPUDirect RDMA: the transport copies to host memory, sends, copies back), and the NIC at half
        its rate."""
        if buffers not in _DEVICE_BUFFERS:
            return Expectation(note=f"buffers {buffers or 'unknown'}: host memory on another node is not modelled "
                                    "(between nodes: GPU buffers only)")
        a, b = self._network_ends()
        flows = [(a, b), (b, a)] if test == "bibw" else [(a, b)]
        # the NIC's DMA moves the data (no copy engine's efficiency); the copy's fixed cost (launch, route
        # latency) is the ce prediction's
        fixed_s = self.fabric.predict([(a, b, m.size_bytes)], CE.key)[0].latency_us * 1e-6
        rate = min(self.fabric.route_gb_per_s(x, y) for x, y in flows)
        elapsed_s = m.size_bytes / (rate * 1e9) + fixed_s
        twin = len(flows) * m.size_bytes / elapsed_s / 1e9
        fixed_share = fixed_s / elapsed_s
        bound = query.theoretical_gb_per_s(self.topology, a, b) * len(flows)
        one_way = twin / len(flows)
        d2h = self._predicted(self.fabric, m, [(a, HOST)], (a, HOST), D2H_PAGEABLE.key)[0]
        h2d = self._predicted(self.fabric, m, [(HOST, b)], (HOST, b), H2D_PAGEABLE.key)[0]
        staged = len(flows) / (1 / d2h + 1 / one_way + 1 / h2d) if min(d2h, h2d, one_way) > 0 else 0.0
        alternatives = (
            Alternative("GPU buffers staged through host memory, one hop after another", staged,
                        "GPU buffers staged through host memory: GPUDirect RDMA off or unavailable (nvidia-peermem / "
                        "dma-buf not loaded, the transport not CUDA-aware: UCX_TLS, OMPI_MCA_pml)", "no-gpudirect-rdma"),
            Alternative("the NIC at half its rate", twin / 2,
                        "the NIC's link likely runs below its rate (ibstat Rate, ethtool Speed, PCIe LnkSta of the NIC)",
                        "nic-degraded"))
        route = f"{self.topology.gpu(a).id}->{self.topology.gpu(b).id} over the network"
        return Expectation("GB/s", bound, twin, None, route, "the NIC's DMA over the network (GPUDirect RDMA)", alternatives,
                           fixed_share=fixed_share)

    def _mpi_host(self, m: Measurement, test: str, buffers: str) -> Expectation:
        """An MPI bandwidth with one end in host memory (OSU ``D H`` / ``H D``): the GPU's host route.
        OSU allocates its host buffers with ``posix_memalign`` (osu-micro-benchmarks 5.3
        mpi/pt2pt/osu_pt2pt.c:370-378, kept in 7.x): pageable memory, so the copy runs at the pageable
        rate through the driver's staging buffer; the host link (pinned) is the bound. ``bibw``
        exchanges the GPU's buffer with host memory: both directions at once, their total."""
        a, b = self.gpu(m.src), self.gpu(m.dst)
        gpu = a if _is_gpu(a) else b
        if not _is_gpu(gpu) or (_is_gpu(a) and _is_gpu(b)):
            return Expectation(note=f"buffers {buffers or 'unknown'}: host memory to host memory is not modelled")
        directions = [(gpu, HOST), (HOST, gpu)] if test == "bibw" else [(a, b)]
        parts = [self._copy(m.with_(src=x, dst=y, direction="uni", scope="transfer"),
                            D2H_PAGEABLE.key if y == HOST else H2D_PAGEABLE.key) for x, y in directions]
        if any(p.twin is None for p in parts):
            return next(p for p in parts if p.twin is None)
        twin = sum(p.twin for p in parts if p.twin is not None)
        bounds = [p.theoretical for p in parts]
        theoretical = sum(x for x in bounds if x is not None) if all(x is not None for x in bounds) else None
        shares = [p.fixed_share for p in parts if p.fixed_share is not None]
        pinned = self._copy(m.with_(src=directions[0][0], dst=directions[0][1], direction="uni", scope="transfer"),
                            D2H.key if directions[0][1] == HOST else H2D.key)
        alternatives = tuple(a for p in parts for a in p.alternatives)
        if pinned.twin is not None and test == "bw":
            alternatives += (Alternative("a host link at half its PCIe width or generation", pinned.twin / 2,
                                         "the GPU's PCIe link likely trained down (check lspci -vv LnkSta)",
                                         "pcie-link-degraded"),)
        detail = f"{' + '.join(p.detail for p in parts)}: OSU's host buffers are pageable"
        return Expectation("GB/s", theoretical, twin, None, self._host_link(gpu), detail, alternatives,
                           fixed_share=max(shares) if shares else None)

    # latencies
    def _latency(self, m: Measurement) -> Expectation:
        kind = (m.extra or {}).get("latency_kind")
        if kind not in ("remote-read", "flag-pingpong", "host-read", "copy"):
            what = "MPI" if m.method.startswith("mpi.") else (kind or m.method)
            return Expectation(unit="us", note=f"{what} latency is not modelled")
        a, b = self.gpu(m.src), self.gpu(m.dst)
        if kind == "host-read":
            kind, a = "remote-read", HOST
        method = m.method if kind == "copy" else None
        size = max(int(m.size_bytes), 1)
        if kind != "copy":
            unknown = self._latency_without_facts(a, b)
            if unknown:
                return Expectation(unit="us", note=unknown)

        def value(model: FabricModel, how: str | None = method) -> float:
            return model.latency_us(kind, a, b, method=how, size_bytes=size)

        route = query.pair_level(self.topology, a, b).code if _is_gpu(a) and _is_gpu(b) else ""
        calibrated = value(self.calibrated) if self.calibrated is not None else None
        alternatives: tuple[Alternative, ...] = ()
        if kind == "copy" and method in PEER_METHODS and _is_gpu(a) and _is_gpu(b) and self.fabric.peer_access(a, b) is None:
            cause = _NO_PEER_DECLARED if (m.extra or {}).get("peer_access") is False else _NO_PEER_CAUSE
            alternatives = (Alternative("PCIe staging through host memory", value(self.fabric, CE_NOPEER.key), cause,
                                        "no-peer-access"),)
        detail = f"{kind} {method}" if method else kind
        return Expectation("us", None, value(self.fabric), calibrated, route, detail, alternatives)


    def _latency_without_facts(self, a: Any, b: Any) -> str:
        """"no facts for GPU model X" when a pointer-chase or flag latency would rest on the default hop
        latency alone: a GPU end whose model the facts table does not know, no latency on any link of
        the route, and no hop latency set by the topology, a calibration or the user ("" otherwise)."""
        if not self.fabric.params.is_default("hop_latency_us"):
            return ""
        ends = [self.fabric.gpu(e) if _is_gpu(e) else self.fabric.router.local_cpu(self.fabric.gpu(b if e == a else a))
                for e in (a, b)]
        unknown = [d for d in ends if d.is_gpu and facts_of_device(d) is None]
        if not unknown:
            return ""
        graph = self.fabric.graph
        for x, y in ((ends[0], ends[1]), (ends[1], ends[0])):
            edges = self.fabric.router.path(x.id, y.id)
            if edges.size and not bool(np.isnan(graph.edge_latency_us[edges]).all()):
                return ""
        return no_facts_reason(unknown[0].name)


def _op(m: Measurement) -> str:
    return m.method.split(".", 1)[1].split("+", 1)[0]
