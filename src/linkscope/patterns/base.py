"""The Pattern protocol and the checks every pattern shares.

A pattern is pure planning (no engine, no vendor library): it has a stable ``key``, a one-line
``description``, ``applies_to(topology, gpus, method_info)`` returning a :class:`Waiver` (why it
cannot run here) or None, and ``plan(topology, gpus, size_bytes, method, direction)`` returning the
concurrent groups to run, in order.

``gpus`` is the selection of GPU indices (topology numbering) the pattern is expanded over; use
:func:`select_gpus` to validate a user's ``--gpus`` list.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..errors import TopologyError, UserError
from ..topology.model import Topology
from .methods import D2H, H2D, endpoint_reason, find_method, host_direction, keys_where
from .plan import HOST, Endpoint, Transfer, TransferPlan, Waiver

if TYPE_CHECKING:
    from .methods import Method as MethodInfo

DIRECTIONS = ("uni", "bi")

#: The model_params key that files and callers from before ``Topology.peer_access`` used for GPU pairs
#: without peer access; a Topology built with it moves the pairs into ``peer_access.denied_pairs``.
NO_PEER_ACCESS_KEY = "no_peer_access"


class Pattern(Protocol):
    @property
    def key(self) -> str: ...  # read-only: patterns are frozen dataclasses

    @property
    def description(self) -> str: ...

    def applies_to(self, topology: Topology, gpus: Sequence[int], method_info: MethodInfo | None) -> Waiver | None: ...

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]: ...


def select_gpus(topology: Topology, gpus: Sequence[int] | None) -> tuple[int, ...]:
    """The GPU selection, validated: all GPUs when None; a GPU that does not exist is a UserError."""
    if gpus is None:
        return tuple(range(topology.gpu_count))
    seen: list[int] = []
    for index in gpus:
        if index < 0 or index >= topology.gpu_count:
            valid = f"0..{topology.gpu_count - 1}" if topology.gpu_count else "none (this topology has no GPU)"
            raise TopologyError(f"GPU {index} does not exist in {topology.name!r}", hint=f"valid GPU indices: {valid}")
        if index in seen:
            raise UserError(f"GPU {index} is listed twice in the GPU selection")
        seen.append(index)
    return tuple(seen)


def check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise UserError(f"unknown direction {direction!r}", hint="valid directions: uni, bi")
    return direction


#: GPU attribute written by NVML discovery: ``{"gpu<j>": {"read": "OK", "write": "CHIPSET_NOT_SUPPORTED", ...}}``
#: (nvmlDeviceGetP2PStatus per capability). Peer access needs both read and write.
P2P_ATTRIBUTE = "p2p"
_P2P_NEEDED = ("read", "write")


def no_peer_access_pairs(topology: Topology) -> set[frozenset[int]]:
    """GPU pairs the topology says have no peer access: ``peer_access.denied_pairs``, and the
    pairs whose P2P read or write status, as NVML discovery recorded it, is not ``OK`` (a recorded
    PCIe machine across sockets, for example). A status that was not recorded is not a refusal.
    A hint for planning on a recorded or preset machine; a live engine's own ``waiver`` is the authority."""
    out: set[frozenset[int]] = {frozenset(pair) for pair in topology.peer_access.denied_pairs}
    index_of = {d.id: d.index for d in topology.gpus if d.index is not None}
    for gpu in topology.gpus:
        recorded = gpu.attributes.get(P2P_ATTRIBUTE) if gpu.attributes else None
        if not isinstance(recorded, dict) or gpu.index is None:
            continue
        for peer_id, status in recorded.items():
            peer = index_of.get(peer_id)
            if peer is None or peer == gpu.index or not isinstance(status, dict):
                continue
            if any(status.get(cap) not in (None, "OK") for cap in _P2P_NEEDED):
                out.add(frozenset((gpu.index, peer)))
    return out


def peer_waiver(topology: Topology, plan: TransferPlan, method_info: MethodInfo | None) -> Waiver | None:
    """A waiver when the method needs peer access and the topology says a GPU pair of the plan lacks it."""
    if method_info is None or not method_info.needs_peer_access:
        return None
    missing = no_peer_access_pairs(topology)
    if not missing:
        return None
    for t in plan.transfers:
        if isinstance(t.src, int) and isinstance(t.dst, int) and frozenset((t.src, t.dst)) in missing:
            a, b = sorted((t.src, t.dst))
            others = " or ".join(keys_where(peer=True, needs_peer_access=False, pageable=False))
            return Waiver(f"no peer access between GPU {a} and GPU {b}; method {plan.method!r} needs it "
                          f"(try {others})")
    return None


def too_few_gpus(key: str, gpus: Sequence[int], need: int) -> Waiver | None:
    if len(gpus) < need:
        return Waiver(f"pattern {key!r} needs at least {need} GPUs; {len(gpus)} selected")
    return None


def peer_method_waiver(key: str, method_info: MethodInfo | None) -> Waiver | None:
    """GPU-to-GPU patterns need a method whose endpoint rule accepts two GPUs."""
    if method_info is not None and endpoint_reason(method_info, 0, 1):
        return Waiver(f"pattern {key!r} moves data between GPUs; method {method_info.key!r} is a "
                      f"host/device-local reference method")
    return None


def host_method_waiver(key: str, method_info: MethodInfo | None, *, to_host: bool | None) -> Waiver | None:
    """Host patterns need a method whose endpoint rule (the method table) accepts a host end in the
    pattern's direction (``to_host`` None: either direction)."""
    if method_info is None:
        return None
    if not method_info.host_endpoint:
        hosts = ", ".join(keys_where(host=True))
        return Waiver(f"pattern {key!r} moves data between GPUs and host memory; method {method_info.key!r} "
                      f"has no host end (methods with one: {hosts})")
    if to_host is True and endpoint_reason(method_info, 0, HOST):
        return Waiver(f"pattern {key!r} moves GPU -> host; method {method_info.key!r} moves host -> GPU (use {D2H.key})")
    if to_host is False and endpoint_reason(method_info, HOST, 0):
        return Waiver(f"pattern {key!r} moves host -> GPU; method {method_info.key!r} moves GPU -> host (use {H2D.key})")
    return None


def host_kind(method: str) -> str | None:
    """``h2d`` / ``d2h`` for a method whose host end is fixed (the method table), else None."""
    info = find_method(method)
    return host_direction(info) if info is not None else None


def both_ways(pairs: Sequence[tuple[Endpoint, Endpoint]], size_bytes: int) -> tuple[Transfer, ...]:
    """Each (a, b) as a->b followed by b->a."""
    out: list[Transfer] = []
    for a, b in pairs:
        out.append(Transfer(a, b, size_bytes))
        out.append(Transfer(b, a, size_bytes))
    return tuple(out)


def one_way(pairs: Sequence[tuple[Endpoint, Endpoint]], size_bytes: int) -> tuple[Transfer, ...]:
    return tuple(Transfer(a, b, size_bytes) for a, b in pairs)


def endpoint_label(e: Endpoint) -> str:
    return "host" if e == HOST else str(e)
