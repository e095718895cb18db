"""NCCL's own cost model (its built-in tuner) and its choice of algorithm, protocol and channels.

NCCL picks, for every collective call, the (algorithm, protocol) pair whose estimated time
``latency + bytes / bandwidth`` is lowest (``src/enqueue.cc`` ``topoGetAlgoInfo``), with latencies and
bandwidths it computes once per communicator from its topology graphs (``src/graph/tuning.cc``
``ncclTopoTuneModel``). This module re-derives those tables from a linkscope topology, so that the
twin (``model.collectives``) runs the algorithm and protocol NCCL would run, and so that NCCL's own
estimate can be printed beside the twin's prediction and a measurement.

Every constant below is NCCL's, cited as ``file:line`` of NVIDIA/nccl at tag v2.28.9-1 (``fetch
github:NVIDIA/nccl``; the NCCL of the lent H100/H200 machines, whose NCCL_DEBUG=TUNING table the
replay reproduces: tests/fixtures/nccl/h100x2-2026-11-25/). Where NCCL runs a search that depends
on the exact PCI tree (``src/graph/search.cc``), this module replays the search on the per-GPU
bandwidth in closed form (``ring_graph``): exact for the uniform NVSwitch and NVLink-pair machines
of the presets, an approximation for irregular meshes (said in docs/comm.md).

Environment honoured as NCCL does: ``NCCL_ALGO``, ``NCCL_PROTO`` (tuning.cc:54 ``parseList`` syntax:
``ring,tree``, ``^ll128``, ``allreduce:tree;broadcast:ring``), ``NCCL_MIN_NCHANNELS`` /
``NCCL_MAX_NCHANNELS`` (connect.cc:325-353, applied at connect.cc:452, 490-491), ``NCCL_NVLS_ENABLE``
(nvls.cc:152, default 2 = when the GPUs and NVSwitches support it), ``NCCL_COLLNET_ENABLE``,
``NCCL_NVLS_NCHANNELS`` (init.cc:61), ``NCCL_P2P_{NVL,PCI,NET}_CHUNKSIZE`` (init.cc:704-706),
``NCCL_BUFFSIZE`` (init.cc:699), ``NCCL_P2P_LL_THRESHOLD`` (enqueue.cc:779),
``NCCL_MAX_P2P_NCHANNELS`` / ``NCCL_MIN_P2P_NCHANNELS`` (paths.cc:856-857), ``NCCL_GRAPH_REGISTER``
(enqueue.cc:258, default 1: user buffers registered when captured in a CUDA graph; the tuner ignores it).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from .nccl_trees import BALANCED_TREE
from .nccl_trees import TREE as TREE_PATTERN

# ---- names (init.cc:49-51; nccl_common.h / nccl_tuner.h order) ------------------------------------------
FUNCS = ("broadcast", "reduce", "allgather", "reduce_scatter", "allreduce")
"""NCCL's collective functions in its order (init.cc:49: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)."""
BROADCAST, REDUCE, ALLGATHER, REDUCE_SCATTER, ALLREDUCE = FUNCS
"""NCCL's ``ncclFunc_t`` values (the tuner branches on them as tuning.cc does); an operation names its
function in the collective descriptor (``linkscope.collectives``, ``nccl_func``)."""
NCCL_FUNC_NAMES = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
ALGOS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
NCCL_ALGO_NAMES = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")  # init.cc:50
PROTOS = ("LL", "LL128", "Simple")  # init.cc:51
TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT = range(7)
LL, LL128, SIMPLE = range(3)
VOLTA, AMPERE, HOPPER, BLACKWELL = range(4)
HW_NVLINK, HW_PCI, HW_NET = range(3)

# ---- tuning.cc constants -------------------------------------------------------------------------------
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)  # tuning.cc:134-139, per Volta/Ampere/Hopper/Blackwell
BASE_LATENCY_US = (  # tuning.cc:143-148 baseLatencies[algo][proto]
    (6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
    (8.0, 8.0, 8.0))
HW_LATENCY_US = (  # tuning.cc:149-168 hwLatencies[hw][algo][proto]
    ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0.0, 0.0, 3.7), (0.0, 0.0, 2.8), (0.0, 0.0, 25.0), (0.0, 0.0, 25.0),
     (0.0, 0.0, 4.0)),  # NVLink
    ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0.0, 0.0, 3.7), (0.0, 0.0, 2.8), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
     (0.0, 0.0, 4.0)),  # PCI
    ((5.0, 8.5, 14.0), (2.7, 4.0, 14.0), (0.0, 0.0, 31.0), (0.0, 0.0, 30.0), (0.0, 0.0, 18.0), (0.0, 0.0, 20.9),
     (0.0, 0.0, 14.0)),  # NET
)
LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))  # tuning.cc:169-174
PER_CH_MAX_RING_LL128_BW = ((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (73.4, 34.6, 73.4))  # tuning.cc:175-180
PER_CH_MAX_TREE_LL128_BW = ((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))  # tuning.cc:181-186
PER_CH_MAX_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))  # :187-192
PER_CH_MAX_NVLS_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 43.8))  # :193-198
TREE_CORRECTION = (  # tuning.cc:578-582, powers of two from 64 B
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)
LL128_WIRE_FRACTION = 0.92  # tuning.cc:305 (busBw * 0.92, "120.0/128.0")
LL128_DATA_FRACTION = 15 / 16  # device.h:105-107: NCCL_LL128_DATAELEMS / NCCL_LL128_LINEELEMS (one flag word per 128 B line)

# ---- topology constants (topo.h, search.cc) ------------------------------------------------------------
NVLINK_BW_PER_LINK = {100: 40.1, 90: 20.6, 86: 12.0, 80: 20.0, 70: 20.0, 60: 18.0}  # topo.h:16-21
PCI_GEN_SPEED = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}  # topo.cc:423-424 (100 Mbps per lane); bw = width*speed/80 (:491)
SPEEDS_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)  # search.cc:976
SPEEDS_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
                0.24, 0.12)  # search.cc:977
SM90_SPEEDS_INTRA = (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)  # search.cc:981
SM90_SPEEDS_INTER = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
                     0.12)  # search.cc:982
SM100_SPEEDS_INTRA = (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)  # search.cc:986
SM100_SPEEDS_INTER = (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2,
                      0.24, 0.12)  # search.cc:987
MAXCHANNELS = 64  # device.h:86
RING_SEARCH_MAX_CHANNELS = MAXCHANNELS // 2  # init.cc:1019
NCCL_STEPS = 8  # device.h:24
DEFAULT_BUFFSIZE = 1 << 22  # init.cc:699 (Simple)
ALLREDUCE_CHUNKSTEPS, ALLREDUCE_SLICESTEPS = NCCL_STEPS // 2, NCCL_STEPS // 4  # collectives.h:17-18
NVLS_NCHANNELS_SM90 = 16  # nvls.cc:148
NVLS_NCHANNELS_SM100, NVLS_NCHANNELS_SM100_NVL = 32, 24  # nvls.cc:149-150: Blackwell across nodes / one NVLink domain
NCCL_MAX_NVLS_ARITY = 32  # device.h:207
P2P_NVL_CHUNKSIZE, P2P_PCI_CHUNKSIZE, P2P_NET_CHUNKSIZE = 1 << 19, 1 << 17, 1 << 17  # init.cc:704-706
NVLS_CHUNKSIZE = 128 * 1024  # nvls.cc:153 (NCCL_NVLS_CHUNKSIZE)
NVLSTREE_MAX_CHUNKSIZE = -2  # enqueue.cc:1977 (NCCL_NVLSTREE_MAX_CHUNKSIZE; -2: 64 KiB from 4 nodes, else the NVLS chunk)
P2P_LL_THRESHOLD = 16384  # enqueue.cc:779
P2P_PER_CHANNEL_NET_BW = 14  # paths.cc:815
MAX_NTHREADS = {LL: 512, LL128: 640, SIMPLE: 512}  # device.h:88-92, 109 (NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS)
THREAD_THRESHOLD = {LL: 8, LL128: 8, SIMPLE: 64}  # comm.h:41-43 (ring LL is multiplied by nRanks: tuning.cc:547)
WARP_SIZE = 32  # device.h:85
TREE_NTHREADS = 640  # NCCL_MAX_NTHREADS (device.h:88): "Tree now uses all threads always" (enqueue.cc:1910)
LL128_BUFFSIZE = 120 * 640 * NCCL_STEPS * 8  # DEFAULT_LL128_BUFFSIZE (init.cc:698): ELEMS_PER_THREAD x MAX_NTHREADS x STEPS x 8 B


def compute_capability(gpu: Any) -> int | None:
    """The CUDA compute capability (x10) of an NVIDIA GPU from its attributes or product name; None
    for other vendors and unknown names."""
    attrs = getattr(gpu, "attributes", None) or {}
    raw = attrs.get("compute_capability")
    if isinstance(raw, str) and raw.replace(".", "").isdigit():
        major, _, minor = raw.partition(".")
        return int(major) * 10 + int(minor or 0)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return round(raw * 10) if raw < 20 else int(raw)
    if (getattr(gpu, "vendor", None) or "nvidia").lower() != "nvidia":
        return None
    name = (getattr(gpu, "name", "") or "").upper()
    table = (("GB10", 121), ("B200", 100), ("B100", 100), ("GB200", 100), ("B300", 103), ("H100", 90), ("H200", 90), ("H800", 90),
             ("GH200", 90), ("H20", 90), ("A100", 80), ("A800", 80), ("A30", 80), ("A40", 86), ("A10", 86),
             ("V100", 70), ("P100", 60), ("K80", 37))
    for key, cc in table:
        if key in name:
            return cc
    return None


def cc_index(cc: int) -> int:
    """tuning.cc:249."""
    return BLACKWELL if cc >= 100 else HOPPER if cc >= 90 else AMPERE if cc >= 80 else VOLTA


def nvlink_bw(cc: int) -> float:
    """Per-link NVLink bandwidth NCCL assumes (topo.h:274-283)."""
    for floor, bw in ((100, 40.1), (90, 20.6)):
        if cc >= floor:
            return bw
    if cc == 86:
        return 12.0
    return 20.0 if cc >= 70 else 18.0 if cc >= 60 else 20.0


# ---- environment ---------------------------------------------------------------------------------------
def _env_int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw.strip(), 0)
    except ValueError:
        raise UserError(f"{key}={raw!r} is not an integer", hint=f"unset {key} or give a whole number") from None


def parse_list(text: str, prefixes: Sequence[str], elems: Sequence[str], key: str) -> list[list[bool]]:
    """NCCL's ``parseList`` (tuning.cc:54-131): which elements are enabled per prefix (function).

    ``"ring,tree"`` enables those for every function and disables the rest; ``"^ll128"`` disables the
    listed ones and enables the rest; ``"allreduce:tree;broadcast:ring"`` does so per function. Only
    the first entry may omit the prefix. Names are case-insensitive. A bad token is an error, as in NCCL.
    """
    table = [[True] * len(elems) for _ in prefixes]
    lower_prefixes = [p.lower() for p in prefixes]
    lower_elems = [e.lower() for e in elems]
    for i, token in enumerate(t for t in text.split(";") if t != ""):
        prefix, sep, rest = token.partition(":")
        if not sep:
            if i > 0:
                raise UserError(f"{key}={text!r}: every entry but the first needs a function prefix",
                                hint=f"e.g. {key}='ring;allreduce:tree'")
            prefix, rest = "", token
        negate = rest.startswith("^")
        names = [n.strip().lower() for n in (rest[1:] if negate else rest).split(",") if n.strip()]
        for n in names:
            if n not in lower_elems:
                raise UserError(f"{key}={text!r}: unknown element {n!r}", hint=f"valid: {', '.join(elems)}")
        if prefix and prefix.lower() not in lower_prefixes:
            raise UserError(f"{key}={text!r}: unknown function {prefix!r}", hint=f"valid: {', '.join(prefixes)}")
        for p, name in enumerate(lower_prefixes):
            if prefix and prefix.lower() != name:
                continue
            for e, elem in enumerate(lower_elems):
                table[p][e] = (elem in names) != negate
    return table


@dataclass(frozen=True)
class NcclSettings:
    """The run choices NCCL reads from its environment (module doc lists the variables)."""

    algo_enable: tuple[tuple[bool, ...], ...] = tuple((True,) * len(ALGOS) for _ in FUNCS)
    proto_enable: tuple[tuple[bool, ...], ...] = tuple((True,) * len(PROTOS) for _ in FUNCS)
    proto_forced: tuple[tuple[bool, ...], ...] = tuple((False,) * len(PROTOS) for _ in FUNCS)
    min_channels: int = 0
    max_channels: int = MAXCHANNELS
    nvls_enable: int = 2
    nvls_channels: int | None = None
    collnet_enable: bool = False
    buffsize: int = DEFAULT_BUFFSIZE
    p2p_nvl_chunk: int = P2P_NVL_CHUNKSIZE
    p2p_pci_chunk: int = P2P_PCI_CHUNKSIZE
    p2p_net_chunk: int = P2P_NET_CHUNKSIZE
    p2p_ll_threshold: int = P2P_LL_THRESHOLD
    min_p2p_channels: int = 1
    max_p2p_channels: int = MAXCHANNELS
    graph_register: bool = True
    nvls_chunk: int = NVLS_CHUNKSIZE
    nvls_tree_max_chunk: int = NVLSTREE_MAX_CHUNKSIZE
    given: tuple[str, ...] = field(default=())

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None) -> NcclSettings:
        env = env or {}
        given = tuple(sorted(k for k in env if k.startswith("NCCL_") and k in TUNER_ENV))
        algo = tuple((True,) * len(ALGOS) for _ in FUNCS)
        proto = tuple((True,) * len(PROTOS) for _ in FUNCS)
        forced = tuple((False,) * len(PROTOS) for _ in FUNCS)
        if env.get("NCCL_ALGO"):
            algo = tuple(tuple(r) for r in parse_list(env["NCCL_ALGO"], NCCL_FUNC_NAMES, NCCL_ALGO_NAMES, "NCCL_ALGO"))
        if env.get("NCCL_PROTO"):
            rows = parse_list(env["NCCL_PROTO"], NCCL_FUNC_NAMES, PROTOS, "NCCL_PROTO")
            proto = tuple(tuple(r) for r in rows)
            forced = proto  # an explicit LL128 is taken as given (tuning.cc:480: only the default 2 is checked)
        lo = _env_int(env, "NCCL_MIN_NCHANNELS", _env_int(env, "NCCL_MIN_NRINGS", 0))
        hi = _env_int(env, "NCCL_MAX_NCHANNELS", _env_int(env, "NCCL_MAX_NRINGS", MAXCHANNELS))
        nvls = _env_int(env, "NCCL_NVLS_ENABLE", 2)
        nvls_ch = env.get("NCCL_NVLS_NCHANNELS")
        return cls(
            algo_enable=algo, proto_enable=proto, proto_forced=forced,
            min_channels=min(max(lo, 0), MAXCHANNELS),  # connect.cc:332-336
            max_channels=min(max(hi, 1), MAXCHANNELS),  # connect.cc:347-351
            nvls_enable=nvls, nvls_channels=_env_int(env, "NCCL_NVLS_NCHANNELS", 0) if nvls_ch else None,
            collnet_enable=_env_int(env, "NCCL_COLLNET_ENABLE", 0) == 1,
            buffsize=_env_int(env, "NCCL_BUFFSIZE", DEFAULT_BUFFSIZE),
            p2p_nvl_chunk=_env_int(env, "NCCL_P2P_NVL_CHUNKSIZE", P2P_NVL_CHUNKSIZE),
            p2p_pci_chunk=_env_int(env, "NCCL_P2P_PCI_CHUNKSIZE", P2P_PCI_CHUNKSIZE),
            p2p_net_chunk=_env_int(env, "NCCL_P2P_NET_CHUNKSIZE", P2P_NET_CHUNKSIZE),
            p2p_ll_threshold=_env_int(env, "NCCL_P2P_LL_THRESHOLD", P2P_LL_THRESHOLD),
            min_p2p_channels=_env_int(env, "NCCL_MIN_P2P_NCHANNELS", 1),
            max_p2p_channels=_env_int(env, "NCCL_MAX_P2P_NCHANNELS", MAXCHANNELS),
            graph_register=_env_int(env, "NCCL_GRAPH_REGISTER", 1) != 0,  # enqueue.cc:258
            nvls_chunk=_env_int(env, "NCCL_NVLS_CHUNKSIZE", NVLS_CHUNKSIZE),
            nvls_tree_max_chunk=_env_int(env, "NCCL_NVLSTREE_MAX_CHUNKSIZE", NVLSTREE_MAX_CHUNKSIZE),
            given=given,
        )


#: The environment variables the replayed tuner reads (``NcclSettings.from_env``)
TUNER_ENV = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS",
              "NCCL_MAX_NRINGS", "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS", "NCCL_COLLNET_ENABLE", "NCCL_BUFFSIZE",
              "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_LL_THRESHOLD",
              "NCCL_MIN_P2P_NCHANNELS", "NCCL_MAX_P2P_NCHANNELS", "NCCL_GRAPH_REGISTER", "NCCL_NVLS_CHUNKSIZE",
              "NCCL_NVLSTREE_MAX_CHUNKSIZE")


# ---- the machine as NCCL sees it ------------------------------------------------------------------------
@dataclass(frozen=True)
class Graph:
    """One of NCCL's topology graphs after its search: channels and per-channel bandwidth (GB/s)."""

    n_channels: int
    bw_intra: float
    bw_inter: float


def _speeds(cc: int, inter: bool) -> tuple[float, ...]:
    if cc >= 100:
        return SM100_SPEEDS_INTER if inter else SM100_SPEEDS_INTRA
    if cc >= 90:
        return SM90_SPEEDS_INTER if inter else SM90_SPEEDS_INTRA
    return SPEEDS_INTER if inter else SPEEDS_INTRA


def ring_graph(total_bw: float, max_bw: float, cc: int, inter: bool, *, consume: float = 1.0,
               max_channels: int = RING_SEARCH_MAX_CHANNELS, dup: bool = True, nics: int = 0,
               nic_bw: float = 0.0) -> Graph:
    """NCCL's ring/tree search (search.cc:991-1197) replayed on a GPU with ``total_bw`` GB/s of NCCL
    bandwidth (``max_bw`` on its best single path): every channel of speed s takes ``consume * s``
    from the GPU's links. Pass 1 starts at the first speed that fits (search.cc:1075-1076), keeps the
    best ``channels * speed`` and steps down while the next speed is > 0.49 of the best (:1145);
    stops once the channels fill the bandwidth (:1099); duplicates channels (``ncclTopoDupChannels``,
    :961-972); pass 2 raises the speed while the same channel count still fits (:1168-1174). Across
    nodes (``nics`` > 0) every channel also enters and leaves the node through a NIC, taking its speed
    from that NIC's ``nic_bw`` each way (search.cc:669 ncclTopoSearchRecNet follows the GPU-to-NET path with
    the channel's bwInter), so a speed s gives at most ``nics * floor(nic_bw / s)`` channels."""
    speeds = _speeds(cc, inter)
    if total_bw <= 0 or max_bw <= 0:
        return Graph(1, 0.1, 0.1)  # search.cc:1189-1195: the simple-order fallback

    def channels(s: float) -> int:
        if s > max_bw + 1e-9:
            return 0
        n = min(max_channels, int(total_bw / (consume * s) + 1e-9))
        return min(n, nics * int(nic_bw / s + 1e-9)) if nics > 0 else n

    i = 0
    while i < len(speeds) - 1 and (speeds[i] > max_bw or speeds[i] > total_bw):
        i += 1
    best_n, best_s = channels(speeds[i]), speeds[i]
    while best_n * best_s < total_bw - 1e-9 and i < len(speeds) - 1:
        nxt = speeds[i + 1]
        if best_n and nxt / best_s <= 0.49:
            break
        i += 1
        n = channels(nxt)
        if n * nxt > best_n * best_s + 1e-9 or best_n == 0:
            best_n, best_s = n, nxt
    if best_n == 0:
        return Graph(1, 0.1, 0.1)
    n, s = best_n, best_s
    if dup and s >= 25.0 and not (cc > 80 and s < 50.0 and n > 4):  # search.cc:961-972
        dup_n = min(2 * n, max_channels)
        s /= math.ceil(dup_n / n)
        n = dup_n
    j = next((k for k, v in enumerate(speeds) if v <= s + 1e-9), len(speeds) - 1)
    while j > 0 and channels(speeds[j - 1]) >= n:  # pass 2, search.cc:1168-1174
        j -= 1
        s = speeds[j]
    return Graph(n, s, s)


def nvls_graph(gpu_bw: float, n_gpus: int, cc: int) -> Graph:
    """NCCL's NVLS search (search.cc:386-418): one channel per GPU (each GPU heads one),
    every channel taking its speed from every GPU's NVSwitch links in both directions and twice
    from its head, so a speed s fits when ``s * (n + 1) <= gpu_bw``."""
    n = min(NCCL_MAX_NVLS_ARITY, n_gpus)
    for s in _speeds(cc, False):
        if s * (n + 1) <= gpu_bw + 1e-9:
            return Graph(n, s, s)
    return Graph(0, 0.0, 0.0)


def nvls_net_graph(gpu_bw: float, n_gpus: int, cc: int, *, nics: int, nic_bw: float, path_bw: float) -> Graph:
    """NCCL's NVLS search on a node with NICs (ncclTopoCompute, search.cc:991-1197 at v2.28.9-1; the same logic at
    v2.25.1-1 :945-1144 and v2.26.2-1 :928-1136): each channel is a head GPU reached from its own NIC
    (ncclTopoSearchRecNet, :694-712: one NET a channel, its local GPU, no GPU heading twice) at the inter speed,
    and every GPU's NVSwitch links carry the intra speed both ways, twice for the head (ncclTopoSearchTryNvls,
    :386-416).

    Pass 1 takes one speed for both from the inter-node list (:1074-1076), starting at the best GPU-to-NIC path
    (``path_bw``: system->maxBw over NET paths, :19-27), keeps the graph with more channels or more channels x
    speed (ncclTopoCompareGraphs, :423-427), and steps down while the next speed is > 0.49 of the kept one (:1145)
    until a search reaches NCCL_MAX_NVLS_ARITY (or all GPUs) or channels x speed reaches the GPU's NVLink total
    (:1099). Pass 2 keeps the channels and raises the inter speed while it is below twice the intra speed and the
    NICs carry it (:1175-1178; :1112-1115 at v2.26.2-1), else tries a higher intra speed (:1179-1182): on a GB200
    rack (18 x 40.1 GB/s of NVLink, 400 Gb/s NICs on PCIe Gen5) 32 heads x 20 GB/s intra and 40 on the NIC, on a
    DGX H100 8 x 40 and 48."""
    speeds = _speeds(cc, True)
    max_channels = min(NCCL_MAX_NVLS_ARITY, n_gpus)
    heads = min(max_channels, max(0, nics))  # one head per NET with a local GPU (search.cc:694-712)
    inter_cap = min(nic_bw, path_bw) if path_bw > 0 else nic_bw

    def found(intra: float, inter: float, want: int | None = None) -> int:
        """Channels a search finds at these speeds (``want``: pass 2's fixed count, else as many as fit)."""
        if inter > inter_cap + 1e-9 or intra <= 0:
            return 0
        k = min(heads, int(gpu_bw / intra + 1e-9) - 1)  # after k heads, a head has used (k + 1) x intra
        if want is not None:
            return want if k >= want else 0
        return max(0, k)

    total = gpu_bw * n_gpus / (n_gpus - 1) if n_gpus > 1 else gpu_bw  # search.cc:1074 (non-ring patterns)
    i = 0
    while i < len(speeds) - 1 and (speeds[i] > inter_cap + 1e-9 or speeds[i] > total + 1e-9):
        i += 1
    best_n, best_s = 0, 0.0
    while True:
        s = speeds[i]
        n = found(s, s)
        if n > 0 and (n > best_n or n * s > best_n * best_s):
            best_n, best_s = n, s
        if best_n == max_channels or (best_n and best_n * best_s >= gpu_bw - 1e-9):
            break  # a perfect search (time -1) or the NVLink total reached (search.cc:1099-1100)
        if i < len(speeds) - 1 and (best_n == 0 or speeds[i + 1] / best_s > 0.49):
            i += 1
            continue
        break
    if best_n == 0:
        return Graph(0, 0.0, 0.0)
    g_intra = g_inter = t_intra = t_inter = best_s
    j = next((k for k, v in enumerate(speeds) if v <= best_s + 1e-9), len(speeds) - 1)
    while j > 0:  # pass 2 (search.cc:1168-1187)
        if t_inter == g_inter and t_inter < 2 * t_intra:
            j -= 1
            t_inter = speeds[j]
        elif t_intra == g_intra and t_intra < 2 * t_inter:
            j -= 1
            t_intra = speeds[j]
        else:
            break
        if found(t_intra, t_inter, best_n) and best_n * t_inter > best_n * g_inter:
            g_intra, g_inter = t_intra, t_inter  # NVLS graphs compare on channels x inter speed only
    return Graph(best_n, g_intra, g_inter)


@dataclass(frozen=True)
class NcclSystem:
    """What NCCL's tuner knows of one communicator: ranks, nodes, GPU generation, link type, graphs."""

    n_ranks: int
    n_nodes: int
    cc: int
    intra_hw: int
    ring: Graph
    tree: Graph
    nvls: Graph
    nvls_support: bool
    collnet_support: bool
    n_channels: int
    """comm->nChannels at run time (ring graph channels clamped by NCCL_MIN/MAX_NCHANNELS)."""
    nvls_channels: int
    p2p_channels: int
    p2p_channels_per_peer: int
    p2p_chunk_bytes: int
    ll128_default: bool
    amd_cpu: bool
    settings: NcclSettings
    nvswitch: bool = False
    tree_pattern: int = BALANCED_TREE
    """The communicator's ``maxTreePattern`` (init.cc:1187: the largest of its nodes' tree graph patterns)."""

    @property
    def cc_index(self) -> int:
        return cc_index(self.cc)

    @property
    def ppn(self) -> float:
        return self.n_ranks / self.n_nodes


def pow2_up(x: int) -> int:
    return 1 << max(0, (max(x, 1) - 1).bit_length())


def build_system(*, n_ranks: int, n_nodes: int, cc: int, intra_hw: int, gpu_bw: float, pair_bw: float,
                 nvswitch: bool, inter_bw: float = 0.0, amd_cpu: bool = False, p2p_peer_channels: int = 2,
                 collnet_fabric: bool = False, settings: NcclSettings | None = None, nics: int = 0,
                 net_path_bw: float = 0.0, tree_pattern: int = BALANCED_TREE) -> NcclSystem:
    """NCCL's view from machine facts: ``gpu_bw`` each GPU's total intra-node NCCL bandwidth,
    ``pair_bw`` its best path to a ring neighbour, ``inter_bw`` its share of NIC bandwidth (GB/s),
    ``p2p_peer_channels`` paths.cc:817-850's channels per peer; ``collnet_fabric``: the network offers
    in-network reduction (SHARP), which CollNet needs besides NCCL_COLLNET_ENABLE=1 (its plugin).
    Across nodes: ``nics`` the NICs of a node its GPUs reach (0: ``inter_bw`` is each GPU's share and
    bounds it, the older reading), ``inter_bw`` then one NIC's rate and ``net_path_bw`` a GPU's best path
    to a NIC (search.cc:20-27 getMaxBw over NET paths; 0: the NIC's rate)."""
    s = settings or NcclSettings()
    inter = n_nodes > 1
    if inter and nics > 0 and inter_bw > 0:
        # search.cc:1073-1075: totalBw is the GPU's own (its NVLinks, :29-37), maxBw its best path to a NET
        path = min(inter_bw, net_path_bw) if net_path_bw > 0 else inter_bw
        ring = ring_graph(gpu_bw, path, cc, True, nics=nics, nic_bw=inter_bw)
    elif inter:
        total = min(gpu_bw, inter_bw) if inter_bw > 0 else gpu_bw
        ring = ring_graph(total, total, cc, True)
    else:
        ring = ring_graph(gpu_bw, pair_bw, cc, False)
    if inter:
        tree = ring
    else:  # a tree channel is a chain, alternating direction: each GPU gives (n-1)/n of a speed per channel;
        # trees get at most the rings' channels (init.cc:1027); on 2 x H100 NCCL logs 12 x 60 GB/s
        tree = ring_graph(gpu_bw, pair_bw, cc, False, consume=(n_ranks - 1) / n_ranks, max_channels=ring.n_channels)
    local = max(1, n_ranks // n_nodes)
    nvls_ok = nvswitch and cc >= 90 and local >= 2 and s.nvls_enable != 0  # search.cc:1036, nvls.cc:161
    nvls = nvls_graph(gpu_bw, local, cc) if nvls_ok else Graph(0, 0.0, 0.0)
    if nvls_ok and inter and inter_bw > 0:
        if nics > 0:  # NCCL's NVLS search with the node's NICs: a head per NIC, pass 2 raising the inter speed
            nvls = nvls_net_graph(gpu_bw, local, cc, nics=nics, nic_bw=inter_bw, path_bw=net_path_bw)
        else:  # only each GPU's NIC share is known: a channel gets its speed where that share carries it
            nvls = Graph(nvls.n_channels, nvls.bw_intra, min(nvls.bw_intra, inter_bw / max(nvls.n_channels, 1)))
    n_ch = min(MAXCHANNELS, 2 * ring.n_channels)  # every search channel is duplicated (connect.cc:452)
    n_ch = min(s.max_channels, n_ch)  # connect.cc:490
    n_ch = max(n_ch, s.min_channels) if s.min_channels else n_ch  # connect.cc:491 (copyChannels duplicates)
    p2p = pow2_up(max(min(n_ch, s.max_p2p_channels), s.min_p2p_channels))  # paths.cc:866-883
    per_peer = min(p2p, pow2_up(p2p_peer_channels))  # paths.cc:882-883
    chunk = s.p2p_net_chunk if inter else s.p2p_nvl_chunk if intra_hw == HW_NVLINK else s.p2p_pci_chunk
    chunk = min(chunk, s.buffsize // NCCL_STEPS)  # init.cc:721
    return NcclSystem(
        n_ranks=n_ranks, n_nodes=n_nodes, cc=cc, intra_hw=intra_hw, ring=ring, tree=tree, nvls=nvls,
        nvls_support=nvls_ok and nvls.n_channels >= 2, collnet_support=s.collnet_enable and inter and collnet_fabric,
        n_channels=max(1, n_ch), nvls_channels=s.nvls_channels or nvls_default_channels(cc, inter), p2p_channels=p2p,
        p2p_channels_per_peer=per_peer, p2p_chunk_bytes=chunk,
        ll128_default=intra_hw == HW_NVLINK or not inter,  # tuning.cc:478-494, simplified: NVLink or PCIe up to PXB
        amd_cpu=amd_cpu, settings=s, nvswitch=nvswitch, tree_pattern=tree_pattern)


def nvls_default_channels(cc: int, inter: bool) -> int:
    """NVLS channels (CTAs) NCCL runs by default (ncclNvlsInit, nvls.cc:185-199 at v2.28.9-1): 16 before
    Blackwell; on Blackwell 24 within one NVLink domain (one node, or an MNNVL clique holding every rank, as an
    NVL72 rack) and 32 across nodes."""
    if cc >= 100:
        return NVLS_NCHANNELS_SM100 if inter else NVLS_NCHANNELS_SM100_NVL
    return NVLS_NCHANNELS_SM90


# ---- the tuning tables (tuning.cc:230-401) and the choice (enqueue.cc:1822-1911) ------------------------
@dataclass(frozen=True)
class Tuning:
    """latency_us[func][algo][proto] and bandwidth (algorithm GB/s, 0 = not available)."""

    latency_us: tuple[tuple[tuple[float, ...], ...], ...]
    bandwidth: tuple[tuple[tuple[float, ...], ...], ...]


def tune(system: NcclSystem) -> Tuning:
    """``ncclTopoTuneModel`` (tuning.cc:230-499) for one communicator."""
    n, nodes, ci = system.n_ranks, system.n_nodes, system.cc_index
    idx2 = nodes - 1 if nodes <= 2 else 2  # tuning.cc:250
    idx1 = ci if nodes == 1 else (1 if system.amd_cpu else 0)  # :252-253
    ll_max = LL_MAX_BW[idx1][idx2]
    tree_max, ring_ll128 = PER_CH_MAX_TREE_BW[ci][idx2], PER_CH_MAX_RING_LL128_BW[ci][idx2]
    tree_ll128, nvls_tree_max = PER_CH_MAX_TREE_LL128_BW[ci][idx2], PER_CH_MAX_NVLS_TREE_BW[ci][idx2]
    ppn = system.ppn
    graphs = {TREE: system.tree, RING: system.ring, COLLNET_DIRECT: system.ring, COLLNET_CHAIN: system.ring,
              NVLS: system.nvls, NVLS_TREE: system.nvls, PAT: system.ring}
    intra_hw = system.intra_hw
    hw = intra_hw if nodes == 1 else HW_NET
    s = system.settings
    lat_all, bw_all = [], []
    for f, func in enumerate(FUNCS):
        nsteps = 2 * (n - 1) if func == ALLREDUCE else n - 1 if func in (REDUCE_SCATTER, ALLGATHER) else n
        lat_f, bw_f = [], []
        for a in range(len(ALGOS)):
            lat_a, bw_a = [0.0] * 3, [0.0] * 3
            skip = ((func in (BROADCAST, REDUCE) and a != RING)
                    or (func in (REDUCE_SCATTER, ALLGATHER) and a not in (PAT, RING, NVLS, COLLNET_DIRECT))
                    or (func == ALLREDUCE and a == PAT))  # tuning.cc:273-277
            g = graphs[a]
            for p in range(3):
                if skip or ((a in (NVLS, NVLS_TREE)) and p != SIMPLE):
                    continue
                if a == PAT and (p != SIMPLE or nodes != n):  # :280-282, 205 (PAT: one GPU per node)
                    continue
                collnet = a in (COLLNET_DIRECT, COLLNET_CHAIN)
                bw = g.bw_intra if nodes <= 2 or collnet else g.bw_inter  # :285
                if a in (NVLS, NVLS_TREE):
                    if g.n_channels < 2:  # :288
                        continue
                    intra = g.bw_intra * NVLS_EFFICIENCY[ci] * (g.n_channels - 1) / g.n_channels  # :290
                    intra *= 2.0 if func == ALLREDUCE else (ppn - 1) / ppn  # :292-296
                    inter_bw = g.bw_inter * (2 if nodes <= 2 and a == NVLS_TREE else 1)  # :297
                    bw = min(intra, inter_bw if nodes > 1 else intra, nvls_tree_max if a == NVLS_TREE else math.inf)
                bus = g.n_channels * bw  # :301
                if a == RING and p == LL:
                    bus = min(ll_max, bus * 0.5)  # :304
                if a == RING and p == LL128:
                    bus = min(bus * LL128_WIRE_FRACTION, g.n_channels * ring_ll128)  # :305
                if a == TREE and func == ALLREDUCE:
                    bus = min(bus * 0.92, g.n_channels * tree_max)  # :306
                if a == TREE and p == LL:
                    bus = min(bus / 3.8, ll_max)  # :307
                if a == TREE and p == LL128:
                    bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), g.n_channels * tree_ll128)  # :308
                if a == TREE and system.tree_pattern == TREE_PATTERN:
                    bus *= 0.85  # :309: all of a node's NIC traffic on one GPU
                if a == PAT:
                    bus *= 0.75  # :310
                if collnet and p != SIMPLE:
                    bus = 0.0  # :311-312
                if a == COLLNET_DIRECT and p == SIMPLE:
                    if func in (ALLGATHER, REDUCE_SCATTER):
                        bus = ppn * min(g.bw_intra, g.bw_inter * 0.9)  # :314-315
                    else:
                        factor = ppn / g.n_channels
                        factor -= (factor - 1) / 2
                        bus /= factor
                        if system.cc >= 90:
                            bus *= 0.85  # :317-321
                if not (a != RING and func in (ALLGATHER, REDUCE_SCATTER)):  # :346-351
                    bus *= (n / nsteps) if a in (RING, NVLS, NVLS_TREE) else 0.5
                lat = BASE_LATENCY_US[a][p]  # :353
                intra_lat = HW_LATENCY_US[intra_hw][a][p]
                inter_lat = HW_LATENCY_US[HW_NET][TREE if ppn == 1 else a][p]  # :356 (graph latencyInter 0)
                if a == RING:
                    ring_lat = HW_LATENCY_US[hw][a][p]
                    if func in (REDUCE, BROADCAST):
                        lat += ring_lat  # :362-365 (sameChannels)
                    else:
                        net = 0.0
                        if nodes > 1:
                            net = (2.0 if system.amd_cpu else 1.0) * (3 if p == SIMPLE else 1)  # :368-372, 213-219
                        intra_lat = max(intra_lat, net)
                        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if func == ALLREDUCE else nodes - 1
                        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat  # :374-375
                elif a == TREE:
                    if func == ALLREDUCE:
                        lat += 2 * ((n // nodes - 1) * intra_lat + _log2i(nodes) * inter_lat)  # :382-384
                elif a == COLLNET_DIRECT:
                    lat += 2 * (min(1, n // nodes - 1) * intra_lat + (n // nodes - 1) * 0.4) + inter_lat  # :386-387
                elif a == COLLNET_CHAIN:
                    lat += 2 * (n // nodes - 1) * intra_lat + inter_lat  # :389
                elif a == NVLS:
                    lat = intra_lat + (inter_lat if nodes > 1 else 0.0)  # :392-393
                elif a == NVLS_TREE:
                    lat += intra_lat + 2 * _log2i(nodes) * inter_lat  # :395
                elif a == PAT and func in (ALLGATHER, REDUCE_SCATTER):
                    lat += _log2i(nodes) * (inter_lat / 3.5) + n * 2.8  # :397-399
                # enable / disable (tuning.cc:403-499)
                enabled = s.algo_enable[f][a] and s.proto_enable[f][p]
                if p == LL128 and not s.proto_forced[f][p]:
                    enabled = enabled and system.ll128_default
                if a == NVLS_TREE and nodes == 1:
                    enabled = False  # :466
                if a in (COLLNET_DIRECT, COLLNET_CHAIN) and not system.collnet_support:
                    enabled = False  # :468-470
                if a == COLLNET_DIRECT and not system.nvswitch:
                    enabled = False  # :472-473 (CollNet Direct needs an NVSwitch system)
                if a == NVLS and nodes > 1 and not system.collnet_support:
                    enabled = False
                if a in (NVLS, NVLS_TREE) and not system.nvls_support:
                    enabled = False
                lat_a[p] = lat
                bw_a[p] = bus if enabled else 0.0
            lat_f.append(tuple(lat_a))
            bw_f.append(tuple(bw_a))
        lat_all.append(tuple(lat_f))
        bw_all.append(tuple(bw_f))
    return Tuning(tuple(lat_all), tuple(bw_all))


def _log2i(x: int) -> int:
    return max(0, int(x).bit_length() - 1)


@dataclass(frozen=True)
class NcclChoice:
    """NCCL's pick for one call: algorithm, protocol, its estimated time and the channels it runs on."""

    algorithm: str
    protocol: str
    estimate_us: float
    channels: int
    estimates_us: Mapping[tuple[str, str], float]


def algo_time_us(tuning: Tuning, system: NcclSystem, func: str, a: int, p: int, n_bytes: int) -> float:
    """``ncclTopoGetAlgoTime`` (tuning.cc:584-600); -1 when unavailable."""
    f = FUNCS.index(func)
    bw = tuning.bandwidth[f][a][p]
    lat = tuning.latency_us[f][a][p]
    if bw == 0:
        return -1.0
    log_size = _log2i(n_bytes >> 6) if n_bytes >> 6 else -1
    if a == TREE and func == ALLREDUCE and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[p][log_size]
    if (a == RING and p == SIMPLE and system.n_nodes > 1 and func == ALLREDUCE
            and n_bytes / (system.n_channels * system.n_ranks) >= 64):
        lat *= 1.9 if system.cc < 80 else 1.4  # :593-596
    return lat + n_bytes / (1000.0 * bw)


def choose(tuning: Tuning, system: NcclSystem, func: str, n_bytes: int) -> NcclChoice:
    """``topoGetAlgoInfo`` (enqueue.cc:1822-1911): the cheapest (algorithm, protocol), then its channels."""
    if system.n_ranks == 1:
        return NcclChoice("ring", "Simple", 0.0, 1, {("ring", "Simple"): 0.0})
    table: dict[tuple[str, str], float] = {}
    best: tuple[float, int, int] | None = None
    for a in range(len(ALGOS)):
        for p in range(3):
            t = algo_time_us(tuning, system, func, a, p, n_bytes)
            if t < 0:
                continue
            table[(ALGOS[a], PROTOS[p])] = t
            if best is None or t < best[0]:
                best = (t, a, p)
    if best is None:
        raise UserError(f"no NCCL algorithm/protocol available for {func} with the NCCL_ALGO/NCCL_PROTO given "
                        f"({', '.join(system.settings.given) or 'defaults'})",
                        hint="NCCL fails such a call with ncclInvalidUsage (enqueue.cc:1840-1860)")
    t, a, p = best
    return NcclChoice(ALGOS[a], PROTOS[p], t, channels_for(system, func, a, p, n_bytes), table)


def channels_for(system: NcclSystem, func: str, a: int, p: int, n_bytes: int) -> int:
    """Channels a call runs on (enqueue.cc:1865-1892): NVLS uses its own count; ring and tree drop
    channels while the bytes per thread are below the protocol's threshold."""
    if a in (NVLS, NVLS_TREE):
        return system.nvls_channels
    nc = system.n_channels
    nt = MAX_NTHREADS[p]
    threshold = THREAD_THRESHOLD[p] * (system.n_ranks if (a == RING and p == LL) else 1)  # tuning.cc:547
    while n_bytes < nc * nt * threshold and nc >= 2:
        nc -= 1
    return nc


def threads_for(system: NcclSystem, func: str, a: int, p: int, n_bytes: int) -> int:
    """Threads per channel (CTA) a ring or tree call runs with, before NCCL adds its sync warps
    (enqueue.cc:1895-1910): the protocol's maximum, halved while the bytes per thread are below the
    protocol's threshold (in multiples of 128); a tree always runs NCCL_MAX_NTHREADS."""
    if a == TREE:
        return TREE_NTHREADS
    nc = channels_for(system, func, a, p, n_bytes)
    nt = MAX_NTHREADS[p]
    threshold = THREAD_THRESHOLD[p] * (system.n_ranks if (a == RING and p == LL) else 1)
    while n_bytes < nc * nt * threshold and nt % 128 == 0:
        nt //= 2
    return max(nt, 3 * WARP_SIZE)


def tree_up_threads(p: int) -> int:
    """Threads of a non-root tree rank's CTA that reduce and send up (all_reduce.h runTreeSplit): 70%
    of the warps for LL and LL128, half the threads plus two warps for Simple; the rest receive from
    the parent and broadcast down."""
    if p == SIMPLE:
        half = TREE_NTHREADS // 2
        return half + 64 if half >= 256 else half
    return (TREE_NTHREADS * 7 // (10 * WARP_SIZE)) * WARP_SIZE


def step_payload_bytes(system: NcclSystem, p: int) -> int:
    """Payload bytes of one FIFO step of protocol ``p`` (primitives.h:35, 50, 65): the buffer over
    NCCL_STEPS; LL carries half of it as data, LL128 15 of every 16 words."""
    if p == LL:
        return _ll_buffsize() // NCCL_STEPS // 2
    if p == LL128:
        return LL128_BUFFSIZE // NCCL_STEPS * 15 // 16
    return system.settings.buffsize // NCCL_STEPS


def chunk_payload_bytes(system: NcclSystem, a: int, p: int, n_bytes: int, channels: int) -> int:
    """The chunk a channel moves per ring or tree step for LL and LL128 (calcCollChunking,
    enqueue.cc:1995-2077: one step, chunkSteps 1; a tree's LL128 chunk halves while each channel has
    fewer than nstepsLL128 x 64 / ppn chunks, then x 16, down to 128 KiB and 32 KiB)."""
    chunk = step_payload_bytes(system, p)
    if a == TREE and p == LL128 and channels > 0:
        ppn = system.n_ranks / system.n_nodes
        steps = 1 + _log2i(system.n_nodes) + 0.1 * ppn
        while n_bytes // (channels * chunk) < steps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while n_bytes // (channels * chunk) < steps * 16 / ppn and chunk > 32768:
            chunk //= 2
    return chunk


def nvls_tree_round_bytes(system: NcclSystem, n_bytes: int, channels: int) -> int:
    """Bytes of one round of NVLS-tree allreduce's pipeline: every channel's every head moves one chunk
    (``concurrentOps`` x chunkSize, enqueue.cc:2057-2067 at v2.28.9-1: the NVLS chunk, capped at 64 KiB from 4
    nodes, halved to 256 / 128 / 64 / 32 KiB while the operation holds fewer than 32 / 16 / 4 / 1 rounds of
    the larger one). Heads: the NVLS graph's channels (connect.cc nvls.nHeads)."""
    ops = max(1, channels) * max(1, system.nvls.n_channels)
    chunk = max(0, system.settings.nvls_chunk)  # a chunk size below 0 is not one NCCL can run: no fill
    cap = system.settings.nvls_tree_max_chunk
    if cap == -2:
        cap = 65536 if system.n_nodes >= 4 else chunk
    if cap > 0:  # another value below 1 sets no cap here
        chunk = min(chunk, cap)
    for rounds, limit in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if n_bytes < rounds * ops * chunk and chunk > limit:
            chunk = limit
    return ops * chunk


def nvls_round_bytes(system: NcclSystem, n_bytes: int, channels: int) -> int:
    """Bytes of one round of single-node NVLS allreduce's pipeline: every channel's every head moves one
    chunk (calcCollChunking, enqueue.cc:2041-2055 at v2.28.9-1: the NVLS chunk, at most NCCL_NVLS_CHUNKSIZE,
    cut to 64 / 32 / 16 KiB while the operation holds fewer than 64 / 8 / 2 rounds of the larger one;
    all_reduce.h:410-420 loops over nHeads x chunkSize a channel). Heads: the NVLS graph's channels, at
    most NCCL_MAX_NVLS_ARITY (connect.cc:74-89, device.h:207)."""
    ops = max(1, channels) * max(1, system.nvls.n_channels)
    chunk = max(0, system.settings.nvls_chunk)
    for rounds, limit in ((64, 65536), (8, 32768), (2, 16384)):
        if n_bytes < rounds * ops * chunk and chunk > limit:
            chunk = limit
    return ops * chunk


def nvls_tree_net_hops(system: NcclSystem) -> int:
    """The network hops of NVLS-tree's tree, as NCCL's tuner counts them in its latency (2 x log2i(nNodes):
    up and down, tuning.cc:394-395)."""
    return 2 * _log2i(system.n_nodes)


# ---- point-to-point (alltoall, sendrecv, gather, scatter): enqueue.cc:1040-1110 ---------------
@dataclass(frozen=True)
class P2pPlan:
    """How NCCL runs one send (or recv) of ``n_bytes``: channels, protocol and pipeline chunk."""

    channels: int
    protocol: str
    chunk_bytes: int


def p2p_min_channels(system: NcclSystem) -> int:
    """nChannelsMin of scheduleP2pTasksToPlan (enqueue.cc:1053-1056)."""
    n_min = system.p2p_channels_per_peer
    while n_min * system.n_ranks > system.p2p_channels and n_min > 1:
        n_min //= 2
    return n_min


def p2p_plan(system: NcclSystem, n_bytes: int, *, self_send: bool = False) -> P2pPlan:
    """addP2pToPlan (enqueue.cc:786-901) for one direction of one peer: LL when the bytes fit
    ``p2pnChannelsPerPeer`` x NCCL_P2P_LL_THRESHOLD and the peer is not itself (:800, 821, 834),
    else Simple; then the channels from the protocol's step size (:837-838, 891-901)."""
    n_max = system.p2p_channels_per_peer
    ll = (not self_send) and 0 < n_bytes <= n_max * system.settings.p2p_ll_threshold
    step = _ll_buffsize() // NCCL_STEPS if ll else system.p2p_chunk_bytes
    chunk = step // 2 if ll else step  # LL carries half its bytes as data (:849)
    if n_bytes <= 0:
        return P2pPlan(1, "Simple", chunk)
    multi = system.n_nodes > 1
    min_part = step // 2 if multi else step // 8  # :894
    max_part = step if multi else step * 32  # :895
    nch = min(p2p_min_channels(system), -(-n_bytes // min_part))  # :896
    part = max(min_part, -(-n_bytes // nch))
    while part > max_part and nch <= n_max // 2:  # :898-901
        nch *= 2
        part = -(-n_bytes // nch)
    return P2pPlan(nch, "LL" if ll else "Simple", chunk)


def _ll_buffsize() -> int:
    """DEFAULT_LL_BUFFSIZE (init.cc:697): NCCL_LL_LINES_PER_THREAD * NCCL_LL_MAX_NTHREADS *
    NCCL_STEPS * sizeof(union ncclLLFifoLine) = 8 * 512 * 8 * 16."""
    return 8 * 512 * NCCL_STEPS * 16


MAX_DEV_WORK_P2P_PER_BATCH = 8  # device.h:364: p2p operations (of one epoch of rounds) per work batch
P2P_NTHREADS = 640  # enqueue.cc:1045: a p2p kernel's block is NCCL_MAX_NTHREADS (device.h:88)


def p2p_send_warp_share(works: int) -> float:
    """The warps a send of one p2p work (with its receive) gets on a channel whose batch holds ``works``
    works, over what it gets alone (sendrecv.h:103-111: nWarpPerWork = nWarps / nWorks, of which
    (n-1)/2 receive and the rest send above 4 warps, n/2 each at 4 or fewer): 1, 0.5, 0.3, 0.3, ... 0.1."""

    def send_warps(k: int) -> int:
        per_work = (P2P_NTHREADS // 32) // max(1, k)
        return per_work // 2 if per_work <= 4 else (per_work - 1) // 2 + 1

    return send_warps(works) / send_warps(1)


def p2p_round_channels(system: NcclSystem, round_index: int, channels: int) -> frozenset[int]:
    """The channels a p2p round uses: base = bit-reversed round (channel.h:19-31) plus the part
    index, modulo the p2p channel count (device.h:270-272)."""
    nch = system.p2p_channels
    bits = max(0, nch.bit_length() - 1)
    base = int(format(round_index % max(nch, 1), f"0{bits}b")[::-1], 2) if bits else 0
    return frozenset((base + part) & (nch - 1) for part in range(channels))


def amd_cpus(vendors: Iterable[str | None]) -> bool:
    """Every CPU of the node is AMD's (NCCL's ``NCCL_TOPO_CPU_VENDOR_AMD``, which picks the LL bandwidth
    row of a multi-node ring); False for a node without CPUs."""
    seen = [(v or "").lower() for v in vendors]
    return bool(seen) and all(v == "amd" for v in seen)
