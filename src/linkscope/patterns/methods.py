"""The method table: every transfer method and latency kind linkscope knows, written once.

Patterns, engines (cuda, rocm, sim), the model, mapping, the CLI (``bench --list``) and the docs
(docs/guide.md's method table, ``linkscope.patterns.methods.markdown_table()``) read this table; no
other module spells a method key out. A method says:

* ``peer``: a GPU-to-GPU method (False: host<->device or device-local reference lines);
* ``needs_peer_access``: it cannot run without P2P access between the two GPUs;
* ``host_ends``: which end may be ``"host"`` (``none``, ``src``, ``dst``, ``either``);
* ``endpoints``: the endpoint rule, checked once by :func:`endpoint_reason`:
  ``peer`` (two different GPUs, or one GPU and host memory), ``gpu-pair`` (two different GPUs),
  ``host-to-gpu``, ``gpu-to-host``, ``same-gpu``;
* ``unit``: what moves the bytes: ``copy-engine`` (NVIDIA copy engine / AMD SDMA engine),
  ``kernel`` (SM / CU threads: linkscope's copy kernel or the runtime's blit kernel),
  ``host-staging`` (copies through a host buffer);
* ``issuer``: which GPU issues it when both ends are GPUs (``src`` or ``dst``);
* ``pageable``: host memory is pageable (the runtime copies synchronously: host-timed);
* ``answers``: the question the method answers (docs/guide.md);
* ``meaning``: vendor -> what the method is on that vendor's runtime (a vendor missing from it
  does not offer the method); ``env``: vendor -> environment the runtime must start with (the
  runner runs such a method in a child process with it, ``measure.child``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..errors import ConfigError, UserError
from ..platforms import hardware_platforms
from .plan import HOST, Endpoint

HostEnds = Literal["none", "src", "dst", "either"]
EndpointRule = Literal["peer", "gpu-pair", "host-to-gpu", "gpu-to-host", "same-gpu"]
Unit = Literal["copy-engine", "kernel", "host-staging"]

VENDORS = tuple(p.key for p in hardware_platforms())  # the platform table's hardware vendors
UNIT_TEXT = {
    "copy-engine": "copy/DMA engine (NVIDIA copy engine, AMD SDMA)",
    "kernel": "SM/CU kernel",
    "host-staging": "host staging buffer",
}

#: The unit's name on one vendor, where it has one of its own (else ``UNIT_TEXT``).
UNIT_NAME_BY_VENDOR = {("copy-engine", "nvidia"): "copy engine", ("copy-engine", "amd"): "SDMA engine",
                       ("kernel", "nvidia"): "SM kernel", ("kernel", "amd"): "CU kernel"}


def unit_name(unit: str, vendor: str | None) -> str:
    """What moves the bytes, named for ``vendor`` where known: ``SDMA engine`` for an AMD copy engine."""
    return UNIT_NAME_BY_VENDOR.get((unit, (vendor or "").lower()), UNIT_TEXT.get(unit, unit))


def _frozen(mapping: Mapping[str, object] | None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Method:
    """One transfer method (fields in the module docstring)."""

    key: str
    description: str
    peer: bool
    needs_peer_access: bool
    host_ends: HostEnds
    endpoints: EndpointRule
    unit: Unit
    meaning: Mapping[str, str] = field(default_factory=dict)
    answers: str = ""
    env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    issuer: Literal["src", "dst"] = "src"
    pageable: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "meaning", _frozen(self.meaning))
        object.__setattr__(self, "env", _frozen({k: _frozen(v) for k, v in dict(self.env).items()}))

    @property
    def host_endpoint(self) -> bool:
        """True when a transfer end may be ``"host"``."""
        return self.host_ends != "none"

    def offered_by(self, vendor: str) -> bool:
        return vendor in self.meaning

    def env_for(self, vendor: str) -> Mapping[str, str]:
        """Environment the vendor's runtime must start with for this method ({} = none)."""
        return self.env.get(vendor, {})

    def __hash__(self) -> int:
        return hash(self.key)


CE = Method("ce", "copy engine peer copy with peer access enabled (host end: a plain H2D/D2H copy)",
            peer=True, needs_peer_access=True, host_ends="either", endpoints="peer", unit="copy-engine",
            answers="The link's best case for bulk copies: what `cudaMemcpy`/`hipMemcpy`-based libraries get; the reference line.",
            meaning={"nvidia": "cudaMemcpyPeerAsync on the source's stream (copy engine)",
                     "amd": "hipMemcpyPeerAsync on the source's stream: an SDMA engine above 1 MiB, a blit "
                            "kernel at <= 1 MiB (ROC_P2P_SDMA_SIZE)"})
CE_BLIT = Method("ce-blit", "the same runtime copy done by the runtime's blit kernels (no DMA engine)",
                 peer=True, needs_peer_access=True, host_ends="either", endpoints="peer", unit="kernel",
                 answers='On AMD: the same copy without the SDMA engines; SDMA against blit kernels per GCD pair (SDMA is capped per '
                         'engine).',
            meaning={"amd": "hipMemcpyPeerAsync with HSA_ENABLE_SDMA=0: ROCr's blit kernels on CUs"},
                 env={"amd": {"HSA_ENABLE_SDMA": "0"}})
CE_READ = Method("ce-read", "copy engine peer copy issued by the destination GPU (it reads the peer)",
                 peer=True, needs_peer_access=True, host_ends="either", endpoints="peer", unit="copy-engine", issuer="dst",
                 answers='Whether reading a peer is slower than writing to it. Asymmetries show up here.',
            meaning={"nvidia": "cudaMemcpyAsync (UVA) on the destination's stream",
                          "amd": "hipMemcpyAsync on the destination's stream; ROCr still copies with the "
                                 "source GCD's SDMA engine (a blit kernel at <= 1 MiB): not a read"})
CE_WRITE = Method("ce-write", "copy engine peer copy issued by the source GPU (it writes the peer)",
                  peer=True, needs_peer_access=True, host_ends="either", endpoints="peer", unit="copy-engine",
                  answers='The write-side counterpart of `ce-read`.',
            meaning={"nvidia": "cudaMemcpyAsync (UVA) on the source's stream",
                           "amd": "hipMemcpyAsync on the source's stream: the source GCD's SDMA engine "
                                  "(a blit kernel at <= 1 MiB)"})
CE_NOPEER = Method("ce-nopeer", "the peer copy with peer access disabled (the driver stages through host memory)",
                   peer=True, needs_peer_access=False, host_ends="none", endpoints="gpu-pair", unit="copy-engine",
                   answers='What an application gets without peer access (forgotten, or not allowed across sockets / in some VMs).',
            meaning={"nvidia": "cudaMemcpyPeerAsync, peer access disabled for the pair",
                            "amd": "hipMemcpyPeerAsync, peer access disabled; ROCclr ignores that where the GPUs "
                                   "reach each other (p2pAgents), so on xGMI it is ce's copy"})
SM_PUSH = Method("sm-push", "kernel on the source GPU storing into peer memory (16-byte accesses, unrolled)",
                 peer=True, needs_peer_access=True, host_ends="either", endpoints="peer", unit="kernel",
                 answers='What a kernel writing to remote memory gets (NVSHMEM-style puts, custom all-reduce kernels).',
            meaning={"nvidia": "SM kernel (NVRTC), uint4 loads/stores", "amd": "CU kernel (hipRTC), uint4 loads/stores"})
SM_PULL = Method("sm-pull", "kernel on the destination GPU loading from peer memory (16-byte accesses, unrolled)",
                 peer=True, needs_peer_access=True, host_ends="either", endpoints="peer", unit="kernel", issuer="dst",
                 answers="Remote loads (gets, kernels that read a neighbour's halo).",
            meaning={"nvidia": "SM kernel (NVRTC), uint4 loads/stores", "amd": "CU kernel (hipRTC), uint4 loads/stores"})
STAGED = Method("staged", "naive path through pageable host memory: D2H, then H2D (host-timed)",
                peer=True, needs_peer_access=False, host_ends="none", endpoints="gpu-pair", unit="host-staging", pageable=True,
                answers="The naive path through host memory, as code copying through a `malloc`'d buffer sees it.",
            meaning={"nvidia": "cudaMemcpy D2H into pageable memory, then H2D",
                         "amd": "hipMemcpy D2H into pageable memory, then H2D"})
STAGED_PINNED = Method("staged-pinned", "double-buffered pinned host chunks, D2H of chunk k+1 overlapped with H2D of chunk k",
                       peer=True, needs_peer_access=False, host_ends="none", endpoints="gpu-pair", unit="host-staging",
                       answers='The best achievable path without P2P; a hand-written fallback should reach this rate.',
            meaning={"nvidia": "cudaMemcpyAsync chunks through NUMA-local pinned buffers",
                                "amd": "hipMemcpyAsync chunks through NUMA-local pinned buffers"})
H2D = Method("h2d", "pinned host memory to device", peer=False, needs_peer_access=False, host_ends="src",
             endpoints="host-to-gpu", unit="copy-engine",
             answers='The host link (PCIe or C2C) for pinned buffers: what data loaders and offloading can reach.',
            meaning={"nvidia": "cudaMemcpyAsync H2D (copy engine)", "amd": "hipMemcpyAsync H2D (SDMA)"})
D2H = Method("d2h", "device to pinned host memory", peer=False, needs_peer_access=False, host_ends="dst",
             endpoints="gpu-to-host", unit="copy-engine",
             answers='The host link, device to host, for pinned buffers.',
            meaning={"nvidia": "cudaMemcpyAsync D2H (copy engine)", "amd": "hipMemcpyAsync D2H (SDMA)"})
H2D_PAGEABLE = Method("h2d-pageable", "pageable host memory to device (host-timed)", peer=False, needs_peer_access=False,
                      host_ends="src", endpoints="host-to-gpu", unit="copy-engine", pageable=True,
                      answers='What an unpinned `tensor.cuda()` or a copy from `malloc` memory gets.',
            meaning={"nvidia": "cudaMemcpy from pageable memory", "amd": "hipMemcpy from pageable memory"})
D2H_PAGEABLE = Method("d2h-pageable", "device to pageable host memory (host-timed)", peer=False, needs_peer_access=False,
                      host_ends="dst", endpoints="gpu-to-host", unit="copy-engine", pageable=True,
                      answers='The pageable counterpart of `d2h`.',
            meaning={"nvidia": "cudaMemcpy into pageable memory", "amd": "hipMemcpy into pageable memory"})
LOCAL = Method("local", "device-local copy within one GPU's memory (reference line)", peer=False, needs_peer_access=False,
               host_ends="none", endpoints="same-gpu", unit="copy-engine",
               answers='The device-memory reference line.',
            meaning={"nvidia": "cudaMemcpyAsync D2D on one GPU", "amd": "hipMemcpyAsync D2D on one GCD"})

#: Every transfer method, in ``bench --list`` order.
METHODS: tuple[Method, ...] = (CE, CE_READ, CE_WRITE, CE_BLIT, CE_NOPEER, SM_PUSH, SM_PULL, STAGED, STAGED_PINNED,
                               H2D, D2H, H2D_PAGEABLE, D2H_PAGEABLE, LOCAL)
_BY_KEY = {m.key: m for m in METHODS}

#: The method of a plain ``bench`` and of a ``copy`` latency.
DEFAULT_METHOD = CE


@dataclass(frozen=True)
class LatencyKind:
    key: str
    description: str
    host_end: bool = False  # the memory (src) may be / must be host
    needs_peer_access: bool = False  # between two GPUs it reads or stores through a peer mapping
    #: what one number is: a pointer chase waits for each load's reply (a round trip); a flag store is
    #: seen one way (half a ping-pong); a copy is its device time
    timing: str = "device time"


def latency_timing(key: str) -> str:
    """``round trip`` / ``one way`` / ``device time`` of a latency kind (unknown kinds: ``device time``)."""
    return next((k.timing for k in LATENCY_KINDS_TABLE if k.key == key), "device time")


LATENCY_REMOTE_READ = LatencyKind("remote-read", "one GPU thread pointer-chasing through the memory of src (a GPU, or host)",
                                  needs_peer_access=True, timing="round trip")
LATENCY_FLAG = LatencyKind("flag-pingpong", "one-way flag latency between two GPUs (stores into peer memory)",
                           needs_peer_access=True, timing="one way")
LATENCY_COPY = LatencyKind("copy", "device time of one small copy with --method (default ce)")
LATENCY_HOST_READ = LatencyKind("host-read", "one GPU thread pointer-chasing through pinned host memory (host -> GPU dst)",
                                host_end=True, timing="round trip")
LATENCY_KINDS_TABLE: tuple[LatencyKind, ...] = (LATENCY_REMOTE_READ, LATENCY_FLAG, LATENCY_COPY, LATENCY_HOST_READ)
LATENCY_KINDS: tuple[str, ...] = tuple(k.key for k in LATENCY_KINDS_TABLE)
#: The kinds that need two GPUs (the default of ``bench latency`` and the survey between GPUs).
PAIR_LATENCY_KINDS: tuple[str, ...] = (LATENCY_REMOTE_READ.key, LATENCY_FLAG.key)


def check_latency_kinds(kinds: Sequence[str], text: str, option: str = "--kind") -> list[str]:
    """``kinds`` (parsed from the option's ``text``) when each is a latency kind listed once; else a
    UserError naming the valid kinds."""
    if not kinds:
        raise UserError(f"{option} is empty", hint=f"valid kinds: {', '.join(LATENCY_KINDS)}")
    for k in kinds:
        if k not in LATENCY_KINDS:
            raise UserError(f"unknown latency kind {k!r}", hint=f"valid kinds: {', '.join(LATENCY_KINDS)}")
        if kinds.count(k) > 1:
            raise UserError(f"latency kind {k!r} is listed twice in {option} {text!r}")
    return list(kinds)


def method_keys(vendor: str | None = None) -> tuple[str, ...]:
    """Every method key (of one vendor's runtime when ``vendor`` is given)."""
    return tuple(m.key for m in METHODS if vendor is None or m.offered_by(vendor))


def find_method(key: str) -> Method | None:
    return _BY_KEY.get(key)


def get_method(key: str) -> Method:
    """The method ``key``, or a ConfigError naming the valid keys."""
    method = _BY_KEY.get(key)
    if method is None:
        raise ConfigError(f"unknown transfer method {key!r}", hint=f"valid methods: {', '.join(_BY_KEY)}")
    return method


def methods_for(vendor: str) -> tuple[Method, ...]:
    return tuple(m for m in METHODS if m.offered_by(vendor))


def keys_where(*, peer: bool | None = None, needs_peer_access: bool | None = None, unit: tuple[str, ...] | None = None,
               endpoints: tuple[str, ...] | None = None, pageable: bool | None = None, host: bool | None = None) -> tuple[str, ...]:
    """Keys of the methods with the given properties (None = any). ``host``: host ends allowed."""
    out = []
    for m in METHODS:
        if peer is not None and m.peer != peer:
            continue
        if needs_peer_access is not None and m.needs_peer_access != needs_peer_access:
            continue
        if unit is not None and m.unit not in unit:
            continue
        if endpoints is not None and m.endpoints not in endpoints:
            continue
        if pageable is not None and m.pageable != pageable:
            continue
        if host is not None and m.host_endpoint != host:
            continue
        out.append(m.key)
    return tuple(out)


def host_direction(method: Method | str) -> str | None:
    """``"h2d"`` / ``"d2h"`` for a method whose host end is fixed, else None."""
    m = get_method(method) if isinstance(method, str) else method
    return {"src": H2D.key, "dst": D2H.key}.get(m.host_ends)


def endpoint_reason(method: Method | str, src: Endpoint, dst: Endpoint) -> str | None:
    """Why ``src -> dst`` breaks the method's endpoint rule, or None (the one check of endpoints)."""
    m = get_method(method) if isinstance(method, str) else method
    src_gpu, dst_gpu = isinstance(src, int) and not isinstance(src, bool), isinstance(dst, int) and not isinstance(dst, bool)
    for end, gpu in ((src, src_gpu), (dst, dst_gpu)):
        if not gpu and end != HOST:
            return f"bad transfer end {end!r}: a GPU index or 'host'"
    desc = f"{src}->{dst}"
    rule = m.endpoints
    if rule == "gpu-pair":
        if not (src_gpu and dst_gpu) or src == dst:
            return f"method {m.key!r} needs two different GPUs; transfer {desc} has not"
    elif rule == "peer":
        if not (src_gpu or dst_gpu):
            return f"method {m.key!r} needs a GPU end; transfer {desc} has none"
        if src_gpu and dst_gpu and src == dst:
            return f"method {m.key!r} copies between two GPUs; use {LOCAL.key!r} for {desc}"
    elif rule == "host-to-gpu":
        if not (src == HOST and dst_gpu):
            return f"method {m.key!r} copies host -> GPU; transfer {desc} is not"
    elif rule == "gpu-to-host":
        if not (src_gpu and dst == HOST):
            return f"method {m.key!r} copies GPU -> host; transfer {desc} is not"
    elif rule == "same-gpu" and not (src_gpu and src == dst):
        return f"method {m.key!r} copies within one GPU; transfer {desc} is not"
    return None


def markdown_table() -> str:
    """docs/guide.md's method table (generated: ``python -c 'from linkscope.patterns.methods import
    markdown_table; print(markdown_table())'``)."""
    rows = ["| method | what it measures | ends | moved by | NVIDIA | AMD | what it tells you |",
            "|---|---|---|---|---|---|---|"]
    for m in METHODS:
        ends = {"peer": "GPU->GPU or GPU<->host", "gpu-pair": "two GPUs", "host-to-gpu": "host->GPU",
                "gpu-to-host": "GPU->host", "same-gpu": "one GPU"}[m.endpoints]
        if m.needs_peer_access:
            ends += ", peer access"
        amd = m.meaning.get("amd", "not offered")
        env = m.env_for("amd")
        if env:
            amd += " (runs in a child process with " + ", ".join(f"{k}={v}" for k, v in env.items()) + ")"
        rows.append(f"| `{m.key}` | {m.description} | {ends} | {UNIT_TEXT[m.unit]} | "
                    f"{m.meaning.get('nvidia', 'not offered')} | {amd} | {m.answers} |")
    rows.append("")
    rows.append("| latency kind | what it measures |")
    rows.append("|---|---|")
    for k in LATENCY_KINDS_TABLE:
        rows.append(f"| `{k.key}` | {k.description} |")
    return "\n".join(rows)


__all__ = [
    "DEFAULT_METHOD",
    "LATENCY_KINDS",
    "METHODS",
    "LatencyKind",
    "Method",
    "endpoint_reason",
    "find_method",
    "get_method",
    "host_direction",
    "keys_where",
    "markdown_table",
    "method_keys",
    "methods_for",
]
