"""Device-side latencies.

* ``remote_read_us``: one thread on the reading GPU follows a random single-cycle permutation
  (a random visiting order closed into one cycle) of 64-bit indices stored ``STRIDE_BYTES`` apart in the memory being
  measured (a peer GPU's, the GPU's own, or mapped pinned host memory): every load depends on the
  previous one, lands on a different cache line, and the order defeats prefetching. A timed
  region of ``HOPS`` loads, gated and timed by device events, gives µs per hop.
* ``flag_pingpong_us``: a kernel on each GPU bounces a counter through the other GPU's memory
  (volatile stores into peer memory followed by ``__threadfence_system``, volatile polling of the
  local copy); times come from ``%globaltimer`` between the first and last value received on the
  initiating GPU, so launch skew is not counted; one-way latency = half a round trip.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import MeasurementError
from ...platforms import CHASE_EVERY_SM, CHASE_IN_TURN, CHASE_ONE_BLOCK, CHASE_SPREADS
from .buffers import DeviceBuffer, PinnedHostBuffer
from .gate import EventPair, Gate
from .kernels import GATE_TIMEOUT_NS
from .ops import HOST, OpContext, Place, u64

STRIDE_BYTES = 256  # beyond a 128-byte line and its 32-byte sectors
LINE_BYTES = 128  # what one node occupies in a cache (one line; the rest of its stride is never read)
#: The chain's cache footprint is at least this many times the reader's L2, so a hop is a miss
#: (2 MiB fits an MI250X GCD's 8 MB L2 and an H100's 50 MB; the chase then measured the L2).
L2_FOOTPRINT_FACTOR = 2
DEFAULT_CHASE_BYTES = 2 * 1024 * 1024
MIN_CHASE_BYTES = 64 * 1024
HOPS = 10_000
#: Hops a launch when the chase runs on each SM in turn (a launch per SM and sample: 132 x 2,000 hops through
#: host memory take 0.32 s on an H100). 2 x H100 read the same at 2,000 and 10,000 (visit 12,
#: docs/runs/scripts/chase_modes.py: host 1.186-1.202 against 1.186-1.204 us, a peer 0.8296-0.8301 against 0.8275-0.8281).
IN_TURN_HOPS = 2_000
PINGPONG_ROUNDS = 2_000


CHASE_ORDERS = ("random", "sequential")


def chase_cycle(n_nodes: int, seed: int = 12345, order: str = "random") -> np.ndarray:
    """Node indices in the order the chase visits them (the last links back to the first)."""
    if order not in CHASE_ORDERS:
        raise ValueError(f"chase order {order!r}: expected one of {', '.join(CHASE_ORDERS)}")
    if order == "sequential":
        return np.arange(n_nodes, dtype=np.uint64)
    return np.random.default_rng(seed).permutation(n_nodes).astype(np.uint64)


def chase_nodes(n_nodes: int, stride_words: int, base_address: int = 0, seed: int = 12345,
                order: str = "random") -> np.ndarray:
    """Node i (at word i*stride_words) holds the address of its successor in one cycle
    (``base_address`` + successor index × stride; with base 0, the byte offset): a random cycle, or
    ``sequential`` (i -> i+1, nvbandwidth's chase: testcase.cpp latencyHelper, ``strideLen`` 16 words),
    which lets the memory system see consecutive lines and is kept to compare with that tool."""
    return chase_links(chase_cycle(n_nodes, seed, order), stride_words, base_address)


def chase_links(visit: np.ndarray, stride_words: int, base_address: int = 0) -> np.ndarray:
    """The node words of the cycle that visits the nodes in ``visit`` order (``chase_nodes``)."""
    n_nodes = len(visit)
    nodes = np.zeros(n_nodes * stride_words, dtype=np.uint64)
    succ = np.empty(n_nodes, dtype=np.uint64)
    succ[visit[:-1].astype(np.int64)] = visit[1:]
    succ[int(visit[-1])] = visit[0]
    nodes[:: stride_words] = np.uint64(base_address) + succ * np.uint64(stride_words * 8)
    return nodes


def chase_bytes(size_bytes: int, l2_cache_bytes: int, stride_bytes: int = STRIDE_BYTES) -> int:
    """The chain's size: the requested size (at least MIN_CHASE_BYTES, else DEFAULT_CHASE_BYTES),
    grown until its cache footprint (one LINE_BYTES line per node) is L2_FOOTPRINT_FACTOR x the
    reader's L2, so the chase measures the memory, not the reader's cache."""
    wanted = size_bytes if size_bytes >= MIN_CHASE_BYTES else DEFAULT_CHASE_BYTES
    past_l2 = L2_FOOTPRINT_FACTOR * max(int(l2_cache_bytes), 0) * max(stride_bytes, LINE_BYTES) // LINE_BYTES
    return max(wanted, past_l2)


def remote_read_us(ctx: OpContext, gate: Gate, memory: Place, reader: int, size_bytes: int, reps: int, warmup: int,
                   hops: int | None = None, stride_bytes: int = STRIDE_BYTES, reader_cache_bytes: int = 0,
                   order: str = "random", spread: str = CHASE_ONE_BLOCK, sms: int = 0) -> list[float]:
    """µs per dependent load; each timed region continues where the previous one stopped.

    ``spread`` (platforms.CHASE_SPREADS) over the reader's ``sms`` SMs:

    * ``one-block``: one single-thread block, timed by device events around each launch.
    * ``every-sm``: one single-thread block per SM at once (``pointer_chase_each``), each from its
      own point of the cycle and timed by its own global timer; a sample is the mean over the blocks.
    * ``in-turn``: nvbandwidth's method (kernels.cu latencyPtrChaseKernel): a grid of one block per SM
      in which only block ``k`` chases in its ``k``-th launch. Whole sweeps over the SMs (one when
      ``reps`` <= SMs), cut into ``reps`` runs of consecutive launches; a sample is the mean of one run,
      so the samples' median is near the mean over the SMs, nvbandwidth's figure.

    ``hops`` a timed launch: ``IN_TURN_HOPS`` in turn, else ``HOPS``, unless given.

    One SM alone is not representative: on 2 x H100 (NV18, 2026-11-25) the 132 SMs read a peer's 2 MiB
    chain in 0.79-0.86 us, mean 0.823-0.825, where the SM of block 0 read 0.847-0.853 and nvbandwidth
    0.827-0.830. Which spread each kind takes on which platform: ``platforms.Platform.latency_chase``.

    ``reader_cache_bytes``: the reader's cache that may hold lines of the memory under test (the
    engine says: an AMD GCD's L2 caches coarse-grained peer and host memory, so the chain is sized
    past it with ``chase_bytes`` and every hop is a miss served over the link). 0 keeps the
    requested size: on NVIDIA a peer's lines are not kept in the reader's L2 (flat 0.85 µs from
    64 KiB to 32 MiB on H200, docs/benchmarks.md), and the 2 MiB default measures the link plus the
    owner's L2, the quantity nvbandwidth's latency test reports."""
    if spread not in CHASE_SPREADS:
        raise ValueError(f"unknown chase spread {spread!r} (known: {', '.join(CHASE_SPREADS)})")
    if hops is None:
        hops = IN_TURN_HOPS if spread == CHASE_IN_TURN else HOPS
    buffer_bytes = chase_bytes(size_bytes, reader_cache_bytes, stride_bytes)
    stride_words = max(1, stride_bytes // 8)
    n_nodes = max(2, buffer_bytes // (stride_words * 8))
    nbytes = n_nodes * stride_words * 8
    if memory == HOST:
        buf: DeviceBuffer | PinnedHostBuffer = ctx.pinned_buffer(nbytes, ctx.numa_node.get(reader))
    else:
        assert isinstance(memory, int)
        buf = ctx.device_buffer(memory, nbytes)
    visit = chase_cycle(n_nodes, order=order)
    nodes = chase_links(visit, stride_words, base_address=buf.ptr)
    lane = ctx.pool.lane(reader, 998)
    try:
        ctx.memcpy_async(buf.ptr, int(nodes.ctypes.data), nodes.nbytes, lane)
        lane.stream.synchronize()
        del nodes
        if spread == CHASE_EVERY_SM and sms > 1:  # block b starts at the node b/sms of the way along the cycle
            begin = np.uint64(buf.ptr) + visit[(np.arange(sms) * n_nodes) // sms] * np.uint64(stride_words * 8)
            return _chase_every_sm(ctx, gate, lane, reader, begin.astype(np.uint64), hops, reps, warmup)
        if spread == CHASE_IN_TURN and sms > 1:
            sweeps = -(-max(reps, 1) // sms)
            per_sm = _chase_one_block(ctx, gate, lane, reader, buf.ptr, hops, sweeps * sms, warmup, sms)
            return [float(np.mean(run)) for run in np.array_split(np.asarray(per_sm), max(reps, 1))]
        return _chase_one_block(ctx, gate, lane, reader, buf.ptr, hops, reps, warmup, 1)
    finally:
        buf.free()


def _chase_one_block(ctx: OpContext, gate: Gate, lane: Any, reader: int, start_ptr: int, hops: int, reps: int,
                     warmup: int, blocks: int) -> list[float]:
    """``remote_read_us`` with one chasing thread (on block ``rep % blocks`` of a ``blocks`` grid: with
    ``blocks`` = the SM count, one SM after another), timed by device events around each gated launch:
    µs per hop. The first sample's block is ``max(warmup, 1) % blocks``; ``reps`` = whole sweeps cover
    every block once a sweep."""
    sink = ctx.device_buffer(reader, 8)
    events = EventPair(ctx.rt, reader)
    try:
        samples: list[float] = []
        start = np.zeros(1, dtype=np.uint64)
        start[0] = start_ptr
        for rep in range(max(warmup, 1) + reps):
            gate.arm()
            gate.hold(lane)
            events.record_start(lane)
            target = np.uint32(rep % blocks)  # with blocks = the SM count, one SM after another
            ctx.launch(lane, "pointer_chase", blocks, 1, (u64(int(start[0])), u64(hops), u64(sink.ptr), target))
            events.record_end(lane)
            gate.release()
            elapsed = events.elapsed_s()
            if gate.timed_out():
                raise MeasurementError("start gate timed out during the pointer chase")
            ctx.rt.memcpy(reader, int(start.ctypes.data), sink.ptr, 8)  # the next region starts here
            if rep >= max(warmup, 1):
                samples.append(elapsed / hops * 1e6)
        return samples
    finally:
        events.close()
        sink.free()


def _chase_every_sm(ctx: OpContext, gate: Gate, lane: Any, reader: int, begin: np.ndarray,
                    hops: int, reps: int, warmup: int) -> list[float]:
    """``remote_read_us`` with one chasing block per SM: µs per hop, the mean over the blocks."""
    blocks = len(begin)
    starts, ends, ns = (ctx.device_buffer(reader, 8 * blocks) for _ in range(3))
    try:
        ctx.rt.memcpy(reader, starts.ptr, int(begin.ctypes.data), 8 * blocks)
        host_ns = np.zeros(blocks, dtype=np.uint64)
        samples: list[float] = []
        for rep in range(max(warmup, 1) + reps):
            gate.arm()
            gate.hold(lane)
            ctx.launch(lane, "pointer_chase_each", blocks, 1, (u64(starts.ptr), u64(hops), u64(ends.ptr), u64(ns.ptr)))
            gate.release()
            lane.stream.synchronize()
            if gate.timed_out():
                raise MeasurementError("start gate timed out during the pointer chase")
            ctx.rt.memcpy(reader, int(host_ns.ctypes.data), ns.ptr, 8 * blocks)
            ctx.rt.memcpy(reader, starts.ptr, ends.ptr, 8 * blocks)  # the next region starts where this one stopped
            if rep >= max(warmup, 1):
                samples.append(float(np.mean(host_ns)) / hops / 1e3)
        return samples
    finally:
        for b in (starts, ends, ns):
            b.free()


def flag_pingpong_us(ctx: OpContext, a: int, b: int, reps: int, warmup: int, rounds: int = PINGPONG_ROUNDS) -> list[float]:
    rt = ctx.rt
    # The flags are polled by a running kernel while the peer stores into them: on ROCm plain
    # hipMalloc memory is coarse-grained and those stores need not become visible (TransferBench and
    # RCCL allocate such flags with hipDeviceMallocUncached), so the flags are uncached memory.
    flag_a, flag_b = ctx.device_buffer(a, 256, uncached=True), ctx.device_buffer(b, 256, uncached=True)
    out_a, out_b = ctx.device_buffer(a, 32), ctx.device_buffer(b, 32)
    lane_a, lane_b = ctx.pool.lane(a, 997), ctx.pool.lane(b, 997)
    try:
        samples: list[float] = []
        host_out = np.zeros(3, dtype=np.uint64)
        for rep in range(max(warmup, 1) + reps):
            for buf, lane in ((flag_a, lane_a), (flag_b, lane_b)):
                rt.memset_async(lane.ordinal, buf.ptr, 0, 256, lane.stream)
                lane.stream.synchronize()
            ctx.launch(lane_b, "flag_pingpong", 1, 1, (u64(flag_b.ptr), u64(flag_a.ptr), np.uint32(rounds), np.uint32(0),
                                                     u64(GATE_TIMEOUT_NS), u64(out_b.ptr)))
            ctx.launch(lane_a, "flag_pingpong", 1, 1, (u64(flag_a.ptr), u64(flag_b.ptr), np.uint32(rounds), np.uint32(1),
                                                     u64(GATE_TIMEOUT_NS), u64(out_a.ptr)))
            lane_a.stream.synchronize()
            lane_b.stream.synchronize()
            rt.memcpy(a, int(host_out.ctypes.data), out_a.ptr, 24)
            t_start, t_end, timed_out = (int(x) for x in host_out)
            if timed_out:
                raise MeasurementError(f"flag ping-pong between devices {a} and {b} timed out (flags not seen across)")
            if rep >= max(warmup, 1):
                samples.append((t_end - t_start) / (2 * (rounds - 1)) / 1e3)
        return samples
    finally:
        for buf in (flag_a, flag_b, out_a, out_b):
            buf.free()
