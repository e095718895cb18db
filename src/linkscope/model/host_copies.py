"""Copies through pageable host memory: how the driver moves them, as the model predicts them.

Facts (each with its source):

1. **Staging through pinned bounce buffers.** The GPU cannot DMA from pageable memory; the driver copies
   the data into a page-locked staging buffer and the copy engine moves it from there (NVIDIA developer
   blog, M. Harris, "How to Optimize Data Transfers in CUDA C/C++", 2012,
   https://developer.nvidia.com/blog/how-optimize-data-transfers-cuda-cc/). A host-to-device
   ``cudaMemcpy`` from pageable memory returns "once the pageable buffer has been copied to the staging
   memory for DMA transfer"; a device-to-host one returns once the copy has completed (CUDA Runtime API,
   "API synchronization behavior", https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html).
   The staging copy is done by the calling host thread.
2. **The staging copy and the DMA overlap, so the slower of the two sets the rate** (the model's reading;
   the evidence is indirect). A pageable H2D sweep on the NVIDIA forum reaches 11.4 GB/s at 16-32 MB,
   where the source still sits in the CPU caches, and falls to 8.3 GB/s from 64 MB up, where the copy
   reads DRAM (forums.developer.nvidia.com/t/56270, "How to understand CPU memory transfer data to GPU
   memory speed problem"): the rate follows the CPU copy. Its link is not stated; on a PCIe Gen3 x16 link
   (12-13 GB/s pinned, the GPUs of that thread's time) a copy-then-DMA sequence (1/r = 1/copy + 1/DMA)
   would need a one-thread copy near 90 GB/s to give 11.4, so the two overlap there. Two projects say
   the driver's staging is serial (tracel-ai/cubecl#1404, gabotechs/libcudf-rs#35) in the sense of fact
   4 (synchronous, one buffer), not with a rate that separates the readings. On the machines measured
   here the two readings give the same prediction: the pinned DMA (55 GB/s on 2 x H100 and 1 x H200) is
   the same, and ``host_memcpy_gb_per_s`` is measured through it. They differ on slow links (PCIe Gen3).
   The overlap needs a first chunk: a copy of at most one staging chunk is DMA'd, then copied (one after
   the other), a longer one pays one chunk of DMA before the overlap (``staging_fill_s``). The 2 x H100
   host shows it: a pageable d2h of 64 KiB-1 MiB takes the pinned d2h's time plus the host copy's
   (1 MiB: 22 + 106 us of 148), from 16 MiB the host copy's alone; ``pageable_staging_chunk_bytes`` is
   2 MiB, fitted to that (the driver's buffer size is not documented).
3. **One thread's copy rate is a fact of the socket, far below its memory bandwidth.** A core's
   bandwidth is its outstanding cache misses times 64 B over the memory latency (Little's law), so one
   thread gets a fraction of what all cores get (J. McCalpin, "Single-core memory bandwidth: latency,
   bandwidth and concurrency", 2025, https://sites.utexas.edu/jdm4372/2025/02/17/single-core-memory-bandwidth-latency-bandwidth-and-concurrency;
   "The evolution of single-core bandwidth in multicore processors", 2023). The model keeps it per
   direction (``host_memcpy_gb_per_s.h2d`` / ``.d2h``, ``params``): the two directions copy different
   ways (DRAM -> staging vs staging -> DRAM) and were measured 1.3-1.6x apart on both H100 and H200 hosts.
4. **Two pageable copies of one process do not overlap.** The copy is synchronous with the calling thread
   (fact 1), and the driver stages through one device-wide staging buffer on which even copies of
   different streams serialise (gabotechs/libcudf-rs#35, which measured it and moved to pinned buffers;
   tracel-ai/cubecl#1404: the driver "stages internally and serially"). linkscope's engine issues a
   group's pageable copies from one thread, one after another, and says so in the record's notes. The
   model runs them one after another in the group's order (``serialised``): each at its rate alone, the
   group's total time the sum of theirs.
5. **A source that stays in the host's caches is copied faster.** The forum sweep of fact 2 runs at
   10.9-11.4 GB/s from 8 to 32 MB and at 8.3-8.7 GB/s from 64 MB up, and the 2 x H100 survey of
   2026-11-25 measured h2d-pageable 11.5 GB/s at 16 MiB against 6.4-8.0 GB/s at 256-512 MiB
   (docs/runs/survey-h100x2-2026-11-25.json): a buffer copied again and again while it fits in the last-
   level cache is read from there. The model takes ``host_copy_cache_speedup`` (1.37, the forum's
   plateaus) for host-to-device staging copies of at most ``host_cache_bytes`` (32 MiB, the forum's
   knee); the device-to-host copy writes the user's buffer and showed no such step on the H100 host
   (9.8 GB/s at 16 MiB and 9.9 at 256 MiB). ``model calibrate`` fits both from a sweep.

Not modelled: page-locking on the fly (``cudaHostRegister`` runs at about 1-2 GB/s, openvm-org/
stark-backend#384; no linkscope method pins per copy), demand paging of a buffer not yet touched (the
engine touches its buffers before timing), and several host threads issuing pageable copies at once.
"""
from __future__ import annotations

from ..patterns.methods import H2D, get_method
from .params import ModelParams

SERIAL_NOTE = "pageable copies are synchronous with the host: the group's transfers ran one after another"
"""The note a record carries for a group of such copies (the CUDA engine and the simulated one)."""


def serialised(method: str) -> bool:
    """True when the transfers of one concurrent group with ``method`` run one after another: copies
    through pageable host memory, synchronous with the one host thread that issues them (fact 4)."""
    return get_method(method).pageable


def host_copy_rate_gb_per_s(params: ModelParams, direction: str, size_bytes: int) -> float:
    """One host thread's staging copy rate for a pageable copy of ``size_bytes`` (fact 3; fact 5 for a
    host-to-device copy whose source fits in the host's caches)."""
    rate = params.host_memcpy_gb_per_s(direction)
    if direction == H2D.key and size_bytes <= params["host_cache_bytes"]:
        rate *= params["host_copy_cache_speedup"]
    return rate


def staging_fill_s(params: ModelParams, size_bytes: int, dma_gb_per_s: float) -> float:
    """Seconds of the staging pipeline's fill: the first chunk (``pageable_staging_chunk_bytes``, or the
    whole copy if smaller) crosses the DMA before the host copy overlaps anything (fact 2): a copy of at
    most one chunk is staged-then-copied, one after the other."""
    return min(size_bytes, params["pageable_staging_chunk_bytes"]) / (dma_gb_per_s * 1e9)


def staging_rate_gb_per_s(dma_gb_per_s: float, memcpy_gb_per_s: float) -> float:
    """Rate of a copy staged through pinned bounce buffers: the host copy overlaps the DMA of the
    previous chunk, so the slower of the two sets it (fact 2)."""
    return min(dma_gb_per_s, memcpy_gb_per_s)


__all__ = ["SERIAL_NOTE", "host_copy_rate_gb_per_s", "serialised", "staging_fill_s", "staging_rate_gb_per_s"]
