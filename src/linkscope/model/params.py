"""Parameters of the fabric model: engine limits, efficiencies, overheads, with provenance.

Every number the model uses beyond the Topology's own link capacities and latencies lives here,
under a flat dotted key, with where it came from (``default``, ``datasheet``, ``measured``,
``calibrated``, ``user``) and a citation. ``Topology.model_params`` stores overrides in the same
keys, either as plain numbers or as ``{"value": x, "provenance": "...", "source": "..."}``;
nested objects (``{"link_efficiency": {"nvlink": 0.8}}``) are flattened to dotted keys.

Keys (rates in GB/s per direction = 1e9 B/s, times in microseconds):

* ``link_efficiency.<kind>`` (nvlink, xgmi, pcie, upi, network): payload fraction of a link's
  per-direction capacity that bulk copies reach. Directed link capacity in the model is
  ``count * link_gb_per_s * efficiency`` (a shared resource), where the efficiency is looked up
  per element first: ``link_efficiency.link.<a>|<b>`` (one link, e.g. calibrated), then the link's
  generation ``link_efficiency.<generation>`` (nvlink2, nvlink3, nvlink4, pcie3, pcie4, pcie5, qpi,
  upi, xgmi: ``generation_key``), then its kind. A kind key set by the topology or a calibration
  wins over a generation *default*, so calibrated topologies keep their fitted values. The link's
  ``link_gb_per_s`` stays the physical figure; efficiencies are never folded into it. While
  ``link_efficiency.xgmi`` holds its default (0.81, measured on MI250X), an xGMI link between GPUs whose
  model states a usable rate (``GpuFacts.xgmi_usable_gb_per_s_per_link``: MI300X 48 of 64) takes that
  share instead (``FabricGraph.edge_efficiency``).
* ``p2p_transit_efficiency.<kind>`` also for ``gpu``: an AMD GCD forwarding xGMI traffic to another
  GCD. Per element: the device attribute ``p2p_transit_efficiency`` (a preset fact with its source),
  overridden by ``p2p_transit_efficiency.device.<id>`` (calibrated).
* ``transit_latency_us.<kind>`` (pcie_switch, host_bridge, cpu, gpu, nvswitch): latency a device
  adds when a transfer passes through it (0 unless stated); per element the device attribute
  ``transit_latency_us``, overridden by ``transit_latency_us.device.<id>``.
* ``overhead_us.<method>@<LEVEL>``: extra per-transfer software cost of ``method`` when the pair's
  level is LEVEL (PIX, PXB, PHB, NODE, SYS, NV, XGMI, NET): a per-protocol term, e.g. the host
  staging protocol across sockets (``overhead_us.ce-nopeer@SYS``).
* ``method_efficiency.<method>``: per-transfer cap as a fraction of the raw (theoretical) bottleneck
  of the transfer's route: a kernel copy (``sm-push``/``sm-pull``) reaches a fraction of link peak,
  the driver's host-staged peer copy (``ce-nopeer``) a fraction of the PCIe rate. 1.0 = no extra cap.
* ``engine_cap_gb_per_s.<vendor>``: a copy/DMA engine's per-transfer cap (AMD SDMA); absent = no cap.
  Applies to copy-engine methods (ce, ce-read, ce-write, ce-nopeer, h2d, d2h, staged*).
* ``overhead_us.<method>``: per-transfer software overhead (API call, launch, completion).
* ``hop_latency_us``: latency of a hop whose link has no ``latency_us``. While it holds its default, a
  GPU-NVSwitch NVLink of a GPU model whose facts give a measured remote read takes that model's hop
  instead (``topology.gpufacts``, ``model.graph``).
* ``host_memory_bw_gb_per_s``: host memory bandwidth of a CPU/NUMA node without ``memory_bw_gb_per_s``.
* ``host_memcpy_gb_per_s.h2d`` / ``host_memcpy_gb_per_s.d2h``: the host's one-thread copy rate between
  a pageable buffer and the driver's pinned staging buffer, per direction (a machine fact of the socket:
  one core's memory bandwidth is bounded by its outstanding misses, not by the channels). A pageable
  copy is staged through pinned bounce buffers by the calling thread while the copy engine moves the
  previous chunk, so it runs at the smaller of this rate and the pinned DMA rate (``host_copies``).
  The plain ``host_memcpy_gb_per_s`` (older files) stands for both directions where set.
* ``host_cache_bytes``, ``host_copy_cache_speedup``: a pageable source of at most ``host_cache_bytes``
  stays in the host's caches between copies, and the host-to-device staging copy then reads it
  ``host_copy_cache_speedup`` times faster than from DRAM (``host_copies``, fact 5).
* ``device_memory_bw_gb_per_s``: GPU memory bandwidth for ``local`` copies (read + write share it). While
  it holds its default, a GPU whose model is in the facts table (``topology.gpufacts``) uses that model's
  figure (twice its device-local copy); a GPU the table does not know keeps this default.
* ``p2p_transit_efficiency.<kind>`` (pcie_switch, host_bridge, cpu, upi): per-transfer factor for
  a GPU peer copy over PCIe for each device of that kind it passes through (and each socket link it
  crosses): peer traffic through a root complex or across sockets is forwarded worse than through a
  switch.
* ``remote_read_base_us``, ``flag_base_us``: fixed parts of the pointer-chase and flag ping-pong latencies;
  while ``flag_base_us`` holds its default, a GPU model with a measured flag ping-pong in the facts table
  uses its own (``GpuFacts.flag_base_us``).
* ``pcie_duplex_efficiency_down``, ``pcie_duplex_efficiency_up``: the share of its capacity the
  host-to-device (down, away from the CPU) or device-to-host (up) direction of a GPU's PCIe link
  keeps while the other direction of the same link carries a flow of the same plan (``FabricModel``:
  max-min sharing alone keeps the two directions independent, which PCIe hosts do not).
* ``copy_engine_queue.<vendor>``: 1 where a GPU of that vendor serves its concurrent copy-engine peer copies
  one at a time (``model.issue_queues``), 0 (or absent) where its engines run them at once.
* ``nccl_launch_us``: fixed cost of one NCCL operation (kernel launch, ring set-up), the latency floor
  of a simulated collective (``model.collectives``) launched from a CUDA graph (nccl-tests ``-G``).
* ``nccl_eager_launch_us``, ``nccl_eager_host_per_gpu_us``, ``nccl_eager_host_per_gpu_channel_us``: when
  the host launches each operation (eager: nccl-tests without ``-G``, ``bench nccl`` rows with
  ``cuda_graph`` false; the run choice ``launch="eager"`` of ``CollectiveModel``) an operation takes
  max(device time + ``nccl_eager_launch_us``, host time); the host time is, for each GPU the launching
  thread drives, ``nccl_eager_host_per_gpu_us`` for one channel (plus ``nccl_eager_host_p2p_per_gpu_us``
  for a grouped send/recv) plus ``nccl_eager_host_per_gpu_channel_us`` per further channel task.
* ``nccl_simple_ring_latency_us``, ``nccl_ring_duplex_efficiency``, ``nccl_ring_local_cta_gb_per_s``,
  ``nccl_ring_local_hidden_per_step``: a Simple ring (``CollectiveModel._simple_ring_extra_s``): a fixed
  time per call; the share of the channels' rate each direction keeps when a 2-rank ring's two GPUs copy
  to each other at once; one ring CTA's rate for the last receive's local pass (FIFO to output); the
  share of that pass each link step of a loop hides after the first loop.
* ``nccl_reduce_efficiency``: a reducing step's rate as a fraction of a copying step's (the kernel
  reads its own chunk, the arriving one, and writes the sum).
* ``nccl_p2p_channel_factor``: what one NCCL send/recv channel carries, as a multiple of NCCL's
  per-channel ring bandwidth (``model.collectives``); ``nccl_p2p_registered_channel_factor``: a
  registered send's channel (CUDA graph: no FIFO) over that; ``nccl_p2p_registered_fixed_us``: what a
  registered grouped send/recv adds once per operation.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..patterns.methods import method_keys
from ..topology.model import LEGACY_MODEL_PARAM_KEYS

METHODS = method_keys()  # the one method table (patterns/methods.py)
LINK_KINDS = ("nvlink", "xgmi", "pcie", "upi", "network")
TRANSIT_KINDS = ("pcie_switch", "host_bridge", "cpu", "upi", "gpu")
LINK_GENERATIONS = ("nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "pcie3", "pcie4", "pcie5", "pcie6",
                    "qpi", "upi", "xgmi")
_LINK_FAMILIES = tuple(dict.fromkeys(k.rstrip("0123456789") for k in LINK_GENERATIONS))  # nvlink, pcie, qpi, ...


def generation_key(kind: str, generation: str | None) -> str | None:
    """The efficiency key of a link generation: ``NVLink2`` -> nvlink2, ``PCIe Gen3 x16`` -> pcie3,
    ``QPI 9.6 GT/s`` -> qpi, ``UPI 2.0 16 GT/s`` -> upi, ``xGMI ...`` -> xgmi; None when unknown."""
    if not generation:
        return None
    g = generation.lower().replace(" ", "")
    for family in _LINK_FAMILIES:
        if g.startswith(family):
            if family in LINK_GENERATIONS:  # one generation: the family is the key
                return family
            rest = g[len(family):].removeprefix("gen")  # numbered: the digit after the name (or "Gen")
            return f"{family}{rest[0]}" if rest[:1].isdigit() else None
    return None


_H200 = "nvbandwidth on 4 x H200 (NV18, 478 GB/s theoretical per direction), 2026-11-22, issue 4"
_ASSUME = "assumption, typical order of magnitude; calibrate with linkscope model calibrate"
_SDMA = ("AMD SDMA copy engine per-transfer limit of about 50 GB/s as documented for MI200 (issue 4); "
         "DMA engines used for all copy directions unless HSA_ENABLE_SDMA=0 (ROCR-Runtime environment "
         "variables, rocm.docs.amd.com); 50 GB/s = one 16-wide 25 GT/s Infinity Fabric link "
         "(ROCm MI250 microarchitecture)")

_NVLINK2 = ("Dell EMC 'Deep Learning Performance with P100/V100 on PowerEdge C4130' (HPC blog / owner's manual "
            "resources, Table 3 'Unidirectional peer-to-peer bandwidth', configuration K): p2pBandwidthLatencyTest "
            "47.88-47.93 GB/s per V100-SXM2 pair of 2 NVLink2 = 95.8% of 50 GB/s")
_PCIE3 = ("NVIDIA NCCL src/graph/topo.h: PCI_BW 12.0 GB/s for a PCIe Gen3 x16 path (12.0 of 15.75 GB/s), "
          "https://github.com/NVIDIA/nccl/blob/master/src/graph/topo.h")
_XGMI = ("C. Pearson, 'Interconnect Bandwidth Heterogeneity on AMD MI250x and Infinity Fabric', arXiv:2302.14827 "
         "(2023), Sec. IV: explicit GCD-GCD copies reach up to ~81% of the xGMI link's theoretical bandwidth")
_GCD_HOP = ("arXiv:2302.14827 (Pearson 2023), Sec. IV: GCD pairs without a direct link are routed through another GCD "
            "and measure below directly linked single-link pairs; about 5% per forwarding GCD (issue 14's comparison "
            "against those published figures)")

# Pageable host copies (model/host_copies.py says how they are modelled). The rates are what one host
# thread copies between pageable memory and the driver's staging buffer on the machine that measured
# them: nvidia-h200 (one H200, PCIe Gen5 x16, pinned h2d/d2h 55.4/55.2 GB/s, so the copy, not the DMA,
# bounds them), 2026-11-23, docs/benchmarks.md "One GPU": h2d-pageable 7.05 (docs/runs/scripts/device_engine.py,
# 256 MiB) and 8.54 GB/s (survey, 512 MiB), d2h-pageable 10.93 and 10.73 GB/s. Mean of the two runs.
# A measured figure of another machine: `model calibrate` on a survey with pageable rows replaces it.
_VISITS11_12 = "tests/fixtures/peertools/h100x2-visits11-13"
_PAGEABLE_H2D_GB_PER_S = 7.8
_PAGEABLE_D2H_GB_PER_S = 10.83
_PAGEABLE_SRC = ("nvidia-h200 (1 x H200, PCIe Gen5 x16), 2026-11-23, docs/benchmarks.md 'One GPU' (engine 256 MiB and "
                 "survey 512 MiB runs, mean); the copy into/out of the staging buffer bounds it (pinned: 55.4 GB/s)")
_PAGEABLE_H2D = f"measured, h2d-pageable 7.05 and 8.54 GB/s: {_PAGEABLE_SRC}"
_CACHE_SRC = ("NVIDIA developer forum t/56270 ('How to understand CPU memory transfer data to GPU memory speed "
              "problem'): a pageable H2D sweep runs at 10.9-11.4 GB/s from 8 to 32 MB and 8.3-8.7 GB/s from 64 MB up")
_PAGEABLE_D2H = f"measured, d2h-pageable 10.93 and 10.73 GB/s: {_PAGEABLE_SRC}"

# key -> (value, provenance, source)
_DEFAULTS: dict[str, tuple[float, str, str]] = {
    "link_efficiency.nvlink": (0.826, "measured", f"CE one-way 395 of 478 GB/s: {_H200}"),
    "link_efficiency.pcie": (0.881, "measured", f"H2D/D2H 55.5 of 63.0 GB/s (PCIe Gen5 x16): {_H200}"),
    "link_efficiency.upi": (0.70, "default", _ASSUME),
    "link_efficiency.network": (0.93, "default", _ASSUME),
    # per generation (physical link figures stay in the topology; these are what copies reach on them)
    "link_efficiency.nvlink2": (0.958, "measured", _NVLINK2),
    "link_efficiency.nvlink4": (0.826, "measured", f"CE one-way 395 of 478 GB/s: {_H200}"),
    "link_efficiency.pcie3": (0.762, "datasheet", _PCIE3),
    "link_efficiency.pcie5": (0.881, "measured", f"H2D/D2H 55.5 of 63.0 GB/s (PCIe Gen5 x16): {_H200}"),
    "link_efficiency.xgmi": (0.81, "measured", _XGMI),
    "method_efficiency.sm-push": (0.774, "measured", f"SM copy 370 of 478 GB/s: {_H200}"),
    "method_efficiency.sm-pull": (0.787, "measured", f"SM copy 376 of 478 GB/s: {_H200}"),
    "method_efficiency.ce-nopeer": (0.611, "measured", f"P2P disabled one-way ~38.5 of 63 GB/s PCIe: {_H200}"),
    "engine_cap_gb_per_s.amd": (50.0, "datasheet", _SDMA),
    "overhead_us.ce": (6.0, "default", _ASSUME),
    "overhead_us.ce-read": (6.0, "default", _ASSUME),
    "overhead_us.ce-write": (6.0, "default", _ASSUME),
    "overhead_us.ce-nopeer": (10.0, "default", _ASSUME),
    "overhead_us.ce-blit": (6.0, "default", _ASSUME),
    "overhead_us.sm-push": (5.0, "default", _ASSUME),
    "overhead_us.sm-pull": (5.0, "default", _ASSUME),
    "overhead_us.staged": (12.0, "default", _ASSUME),
    "overhead_us.staged-pinned": (10.0, "default", _ASSUME),
    "overhead_us.h2d": (6.0, "default", _ASSUME),
    "overhead_us.d2h": (6.0, "default", _ASSUME),
    "overhead_us.h2d-pageable": (10.0, "default", _ASSUME),
    "overhead_us.d2h-pageable": (10.0, "default", _ASSUME),
    "overhead_us.local": (4.0, "default", _ASSUME),
    "hop_latency_us": (0.3, "default", _ASSUME),
    "host_memory_bw_gb_per_s": (150.0, "default", _ASSUME),
    "host_memcpy_gb_per_s": (_PAGEABLE_H2D_GB_PER_S, "measured", "both directions where a topology sets it (older files); "
                             "the direction keys below are the defaults"),
    "host_memcpy_gb_per_s.h2d": (_PAGEABLE_H2D_GB_PER_S, "measured", _PAGEABLE_H2D),
    "host_memcpy_gb_per_s.d2h": (_PAGEABLE_D2H_GB_PER_S, "measured", _PAGEABLE_D2H),
    "host_cache_bytes": (32 * 2**20, "measured", f"fitted to the knee of one sweep: 32 MB still fast, 64 MB slow: {_CACHE_SRC}; "
                         "2 x H100 host 2026-11-25: 16 MiB fast, 256 MiB slow (docs/runs/survey-h100x2-2026-11-25.json)"),
    "pageable_staging_chunk_bytes": (2 * 2**20, "measured", "fitted: on the 2 x H100 host (docs/runs/survey-h100x2-2026-11-25.json) "
                                     "a pageable d2h of 64 KiB-1 MiB takes the pinned copy's time plus the host copy's (one "
                                     "after the other), one of 16 MiB and more the host copy's alone: the staging chunk lies "
                                     "between 1 and 16 MiB; 2 MiB taken (the driver's buffer size is not documented)"),
    "host_copy_cache_speedup": (1.37, "measured", f"fitted: 11.4 / 8.33 GB/s, the fast and slow plateaus of {_CACHE_SRC}"),
    "device_memory_bw_gb_per_s": (3000.0, "default", _ASSUME),
    "p2p_transit_efficiency.pcie_switch": (0.97, "default", _ASSUME),
    "p2p_transit_efficiency.host_bridge": (0.80, "default", _ASSUME),
    "p2p_transit_efficiency.cpu": (0.80, "default", _ASSUME),
    "p2p_transit_efficiency.upi": (0.50, "default", _ASSUME),
    "p2p_transit_efficiency.gpu": (0.95, "measured", _GCD_HOP),
    "transit_latency_us.pcie_switch": (0.0, "default", "0 unless the topology states a switch's latency"),
    "transit_latency_us.host_bridge": (0.0, "default", "0 unless the topology states it"),
    "transit_latency_us.cpu": (0.0, "default", "0 unless the topology states it"),
    "transit_latency_us.gpu": (0.0, "default", "0 unless the topology states it"),
    "remote_read_base_us": (0.0, "measured", "2 x H200 NV18, 2026-11-22: the 0.85 us remote-read round trip is all link "
                            "latency (4 x 0.2125 us GPU-NVSwitch hops); docs/runs/survey-512MiB-h200x2-2026-11-22.json"),
    "pcie_duplex_efficiency_down": (0.74, "measured", "fitted: 2 x H100 VM (PCIe Gen5 x16, driver 580.159.04), "
                                    "nvbandwidth v0.8, 2026-11-25: host_to_device_bidirectional_memcpy_ce 40.19 / 40.41 "
                                    "GB/s (H2D while D2H runs) over host_to_device_memcpy_ce 53.98 / 54.53 GB/s alone "
                                    "(tests/fixtures/peertools/h100x2/nvbandwidth.txt)"),
    "pcie_duplex_efficiency_up": (1.0, "default", "no measurement of the D2H direction alone under load is fitted (the "
                                  "2 x H100 surveys show 49.5-52.2 of 54.5 GB/s; they are what model check tests)"),
    "nccl_launch_us": (5.4, "measured", "2 x H200 NV18, NCCL 2.28.9, 2026-11-22, CUDA-graph 8 B times "
                       "(allreduce 5.77 us, sendrecv 6.29 us) minus their route latencies (docs/benchmarks.md)"),
    "nccl_eager_launch_us": (1.24, "measured", "fitted: what an eager launch adds to the same device path (the "
                             "rest of the launch hides behind the previous operation's kernels): 2 x H100 NV18, NCCL "
                             "2.28.9, nccl-tests 2.19.6, 2026-11-25, eager minus -G 10 without registration (the same "
                             "FIFOs: allgather with NCCL_GRAPH_REGISTER=0, reduce_scatter never registered) at 4-128 MiB, "
                             "36 pairs of one lease each, median 1.24 us (-0.6 to 2.7; tests/fixtures/peertools/"
                             "h100x2-visits11-13/visit1{1,2}/nccl/*_eager*.txt against *_G10*). It was 7.6 us, eager minus "
                             "-G 10 allreduce at 8 B-1 KiB (all_reduce.txt), where the host's time bounds the eager "
                             "operation anyway (nccl_eager_host_per_gpu_us)"),
    "nccl_eager_host_per_gpu_us": (6.93, "measured", "the host's time for one eager operation on one channel, per GPU "
                                   "the launching thread drives: the fastest 8 B-1 KiB row of tests/fixtures/nccl/"
                                   "h100x2-2026-11-25/all_reduce.txt, 13.86 us for the two GPUs one nccl-tests thread drives "
                                   "(-g 2), halved (its -G 10 times there are 6.4-8.2 us, so that row is the host's time, "
                                   "the launch gap 1.24 us under it). A property of the run: the same command's rerun "
                                   "(all_reduce_rerun.txt) took 20.22 us, the recorded runs 13.7-22.6 us; the 4 x H200 "
                                   "eager runs (one thread, -g 4, ../shared/recordings/h200x4-2026-11-28) test the scaling"),
    "nccl_eager_host_p2p_per_gpu_us": (3.52, "measured", "fitted: what a grouped send/recv adds to the host's time "
                                       "per GPU over a collective (its ncclSend / ncclRecv tasks, the p2p schedule of "
                                       "enqueue.cc:1039 scheduleP2pTasksToPlan): the fastest 8 B-1 KiB rows of one lease, "
                                       "tests/fixtures/nccl/h100x2-2026-11-25/sendrecv.txt 21.07 us and alltoall.txt 20.73 "
                                       "against all_reduce.txt 13.86, over 2 GPUs; the 4 x H200 eager sendrecv and "
                                       "alltoall at 1 MiB test it"),
    "nccl_eager_host_per_gpu_channel_us": (0.14, "measured", "fitted: what each further channel task adds to the host's "
                                           "time per GPU it drives: tests/fixtures/nccl/h100x2-2026-11-25/all_reduce_rerun.txt "
                                           "(host-bound: its -G 10 times are 9.1-10.4 us there, -g 2), fastest row at "
                                           "256-512 KiB (24 channels) 26.73 us against 20.22 at 8 B-1 KiB (one channel): "
                                           "6.51 / 23 / 2 GPUs"),
    "nccl_reduce_efficiency": (1.0, "default", "a reducing step costs what a copying step costs: the 2-GPU allreduce "
                               "deficit (326.8 GB/s on 2 x H200, once fitted as 0.79) is the serial last receive of every "
                               "ring loop, which model.collectives now times (docs/comm.md); calibrate may set it"),
    "nccl_ring_duplex_efficiency": (0.9004, "measured", "the share of one direction's SM-copy rate that each direction "
                                    "keeps when two GPUs copy to each other at once, as the two GPUs of a 2-rank NVLink ring do: "
                                    "2 x H100 NV18, nvbandwidth v0.8, 2026-11-25, device_to_device_bidirectional_memcpy_read_sm "
                                    "339.08 GB/s over device_to_device_memcpy_read_sm 376.60 (tests/fixtures/peertools/h100x2/"
                                    "nvbandwidth.txt); the registered allgather's slope (317 GB/s, 64 MiB-1 GiB, "
                                    f"{_VISITS11_12}/visit12/nccl/all_gather_G10.txt) and the allreduce's (326-330) test it"),
    "nccl_ring_local_cta_gb_per_s": (39.41, "measured", "fitted: the rate at which one ring CTA copies the last received "
                                     "chunk from NCCL's FIFO into the output: 2 x H100 NV18, NCCL 2.28.9, nccl-tests 2.19.6 "
                                     "-G 10, allgather 64 MiB (one loop per channel: the copy is not hidden) with "
                                     "NCCL_GRAPH_REGISTER=0 minus with registration (which skips the copy): 158.04-123.90, "
                                     "159.90-123.58, 159.48-123.50 us (visit12/nccl/all_gather_G10{,_noreg}.txt, visit11/nccl/"
                                     f"all_gather_G10{{,_noreg}}_r{{1,2}}.txt under {_VISITS11_12}), mean 35.48 us for 32 MiB "
                                     "on each GPU = 945.7 GB/s over 24 CTAs"),
    "nccl_ring_local_hidden_per_step": (0.465, "measured", "fitted: the share of the last receive's local pass that one "
                                        "link step of a loop hides after the first loop (the channels drift apart): 2 x H100, "
                                        "allgather 1 GiB -G 10 with NCCL_GRAPH_REGISTER=0 2023.08 us minus registered 1694.80 "
                                        f"({_VISITS11_12}/visit12/nccl/all_gather_G10{{,_noreg}}.txt): 328.3 us unhidden of "
                                        "567.7 (53.2 us of the first loop + 0.535 of the remaining 514.5); allgather at "
                                        "128-512 MiB and the reduce_scatter and allreduce curves (allreduce: 2 link steps per "
                                        "loop, 93% hidden) test it"),
    "nccl_simple_ring_latency_us": (11.97, "measured", "fitted: the fixed time a Simple ring call takes beyond the launch "
                                    "floor, NCCL's per-step latencies and its link time: the registered allgather -G 10 at "
                                    "4-64 MiB, 2 x H100 NV18, NCCL 2.28.9, 15 rows of visit12/nccl/all_gather_G10.txt and "
                                    f"visit11/nccl/all_gather_G10_r{{1,2}}.txt under {_VISITS11_12}: measured minus the twin "
                                    "10.7-13.9 us, mean 11.97; the size does not change it (a latency, not the old "
                                    "size-proportional pipeline fill)"),
    "nccl_p2p_channel_factor": (1.31, "measured", "fitted: what one NCCL p2p channel (send/recv) carries relative to "
                                "NCCL's per-channel ring bandwidth (15 GB/s on NV18): 2 x H100 sendrecv, 16 channels per "
                                "send, time vs bytes per channel from 2 to 16 MiB has a slope of 19.6 GB/s "
                                "(tests/fixtures/nccl/h100x2-2026-11-25/sendrecv.txt, bench/twin_vs_collectives.py)"),
    "nccl_p2p_registered_channel_factor": (2.045, "measured", "fitted: what a registered (CUDA graph) Simple send "
                                           "channel carries over a FIFO one (nccl_p2p_channel_factor): 4 x H200 NV18, "
                                           "NCCL 2.28.9, nccl-tests 2.19.6 -G 20, sendrecv 1-64 MiB (8 channels per send, "
                                           "one work per channel), least-squares slope 321.6 GB/s = 40.2 GB/s per channel "
                                           "(../shared/recordings/h200x4-2026-11-28/nccl-tests/sendrecv-G20.txt). Was 1.152, "
                                           "fitted on the 2 x H100 alltoall -G 10 at 512 MiB, a row the links bound (16 x "
                                           "22.6 GB/s = the NV18 link): it hid the channel's own rate. The 2 x H100 alltoall "
                                           f"-G 10 rows ({_VISITS11_12}, visit 4) and the 4 x H200 alltoall -G 20 test it"),
    "nccl_p2p_registered_fixed_us": (4.46, "measured", "fitted: the time a registered grouped send/recv takes beyond the "
                                     "launch floor, NCCL's per-round latency and its data: the sender writes the peer's "
                                     "user buffer in one large chunk (sendrecv.h:18-20), which it may only do after the "
                                     "receiver has posted that buffer for this operation, and the receiver ends on the "
                                     "sender's completion signal. 4 x H200 NV18, NCCL 2.28.9, nccl-tests 2.19.6 -G 20, "
                                     "sendrecv 1-64 MiB: intercept of the least-squares line 13.86 us against the twin's "
                                     "9.40 without it (../shared/recordings/h200x4-2026-11-28/nccl-tests/sendrecv-G20.txt); "
                                     f"the 2 x H100 alltoall -G 10 at 1-64 MiB ({_VISITS11_12}, visit 4) test it"),
    "nccl_p2p_fanout_efficiency": (0.765, "measured", "fitted: the share of its links' rate a GPU keeps when the sends "
                                   "of one grouped send/recv go to several other GPUs at once (alltoall beyond 2 GPUs) "
                                   "rather than to one: 4 x H200 NV18, NCCL 2.28.9, nccl-tests 2.19.6, alltoall 512 MiB "
                                   "eager, 290.4 GB/s busbw (../shared/recordings/h200x4-2026-11-28/nccl-tests/"
                                   "alltoall-eager.txt); the same GPUs reach 353 in sendrecv (one peer each). NCCL's "
                                   "source gives no reason (the channels are disjoint per round, channel.h:19-31) and the "
                                   "links do not (sm-push all-to-all on that node: 353 GB/s per GPU): a fit, scope "
                                   "NVSwitch Hopper; the 64 MiB eager and -G 20 rows test it"),
    "copy_engine_queue.nvidia": (1.0, "measured", "one issuing GPU's CE peer copies are served one at a time: k copies "
                                 "move together what one moves and each repetition one runs at the full rate, the others "
                                 "at 1/2, 1/3 of it; 2 x H200 (docs/runs/h200x2-2026-11-28b/call1/linkscope/ce_share.txt, "
                                 "to one peer) and 4 x H200 NV18 (docs/runs/h200x4-2026-11-28d/call2/linkscope/"
                                 "ce_queue.txt, to different peers), 2026-11-28"),
    "nccl_ll_thread_mb_per_s": (10.15, "measured", "fitted: payload one NCCL LL thread stores per second (16 B lines of "
                                "8 B data + flags, NCCL_LL_MAX_NTHREADS 512 per ring channel): 2 x H100 NV18, NCCL 2.28.9, "
                                "nccl-tests 2.19.6, 2026-11-25, NCCL_ALGO=Ring NCCL_PROTO=LL allreduce 1 GiB, 119.67 GB/s "
                                "busbw (tests/fixtures/nccl/h100x2-2026-11-25/all_reduce_Ring_LL.txt); the 64 MiB row and "
                                "the Tree/LL rows test it"),
    "nccl_ll128_thread_mb_per_s": (21.98, "measured", "fitted: payload one NCCL LL128 thread stores per second (128 B lines, "
                                   "NCCL_LL128_MAX_NTHREADS 640 per ring channel): 2 x H100 NV18, NCCL 2.28.9, nccl-tests "
                                   "2.19.6, 2026-11-25, NCCL_ALGO=Ring NCCL_PROTO=LL128 allreduce 1 GiB, 299.15 GB/s busbw "
                                   "(tests/fixtures/nccl/h100x2-2026-11-25/all_reduce_Ring_LL128.txt); the 64 MiB row and the "
                                   "Tree/LL128 rows test it"),
    "flag_base_us": (0.17, "measured", "2 x H200 NV18, 2026-11-22: one-way flag 0.60 us minus the 0.425 us route "
                     "(docs/runs/survey-512MiB-h200x2-2026-11-22.json)"),
}

# keys that may appear without a default (vendors other than amd have no engine cap by default)
_OPEN_PREFIXES = ("engine_cap_gb_per_s.", "copy_engine_queue.", "method_efficiency.", "overhead_us.", "link_efficiency.",
                  "p2p_transit_efficiency.device.", "transit_latency_us.", "p2p_transit_efficiency.")
# non-numeric keys of Topology.model_params that belong to the model but are not parameters
STRUCTURAL_KEYS = LEGACY_MODEL_PARAM_KEYS  # older files' peer-access facts and NIC choice (Topology migrates them)


def default_keys() -> tuple[str, ...]:
    return tuple(_DEFAULTS)


_RECORDING: ContextVar[tuple[set[str], ...]] = ContextVar("linkscope_model_params_recording", default=())


@contextmanager
def recording() -> Iterator[set[str]]:
    """The keys read with ``params[key]`` inside the block (nested blocks each see their own and the
    outer ones see them too): what a prediction used, to say which fits it rests on (model/fits.py)."""
    used: set[str] = set()
    token = _RECORDING.set((*_RECORDING.get(), used))
    try:
        yield used
    finally:
        _RECORDING.reset(token)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping) and "value" not in value:
            out.update(_flatten(value, f"{full}."))
        else:
            out[full] = value
    return out


def _valid_key(key: str) -> bool:
    return key in _DEFAULTS or any(key.startswith(p) and len(key) > len(p) for p in _OPEN_PREFIXES)


@dataclass(frozen=True)
class ModelParams:
    """Model parameters with provenance (STYLE.md C4).

    Attributes:
        values: parameter key -> number (units in the key's name or in the module docstring).
        provenance: key -> default | datasheet | measured | calibrated | user.
        sources: key -> citation or fitting note.
        ignored: keys of the input that are not model parameters (kept to warn about).
    """

    values: Mapping[str, float]
    provenance: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def defaults(cls) -> ModelParams:
        return cls(
            values={k: v[0] for k, v in _DEFAULTS.items()},
            provenance={k: v[1] for k, v in _DEFAULTS.items()},
            sources={k: v[2] for k, v in _DEFAULTS.items()},
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, *, provenance: str = "user",
                     base: ModelParams | None = None) -> ModelParams:
        """Defaults (or ``base``) overridden by ``data`` (a Topology.model_params-style mapping).

        Raises ConfigError for a parameter whose value is not a positive number (zero allowed for
        overheads and latencies).
        """
        params = base or cls.defaults()
        if not data:
            return params
        values, prov, sources = dict(params.values), dict(params.provenance), dict(params.sources)
        ignored = list(params.ignored)
        for key, raw in _flatten(data).items():
            if key in STRUCTURAL_KEYS:
                continue
            if not _valid_key(key):
                ignored.append(key)
                continue
            item_prov, item_source = provenance, ""
            if isinstance(raw, Mapping):
                item_prov = str(raw.get("provenance", provenance))
                item_source = str(raw.get("source", ""))
                raw = raw.get("value")
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                raise ConfigError(f"model parameter {key!r} must be a number, got {raw!r}")
            value = float(raw)
            nonneg = key.startswith(("overhead_us.", "transit_latency_us.", "copy_engine_queue.")) or key.endswith("_us")
            if value < 0 or (value == 0 and not nonneg) or value != value:
                raise ConfigError(f"model parameter {key!r} must be {'>= 0' if nonneg else '> 0'}, got {raw!r}")
            values[key] = value
            prov[key] = item_prov
            sources[key] = item_source
        return cls(values=values, provenance=prov, sources=sources, ignored=tuple(ignored))

    @classmethod
    def for_topology(cls, topology: Any, overrides: ModelParams | Mapping[str, Any] | None = None) -> ModelParams:
        """Defaults, then the topology's ``model_params``, then ``overrides``."""
        params = cls.from_mapping(getattr(topology, "model_params", None) or {}, provenance="user")
        if overrides is None:
            return params
        if isinstance(overrides, ModelParams):
            return cls(
                values={**params.values, **overrides.values},
                provenance={**params.provenance, **overrides.provenance},
                sources={**params.sources, **overrides.sources},
                ignored=params.ignored + overrides.ignored,
            )
        return cls.from_mapping(overrides, provenance="user", base=params)

    def with_values(self, updates: Mapping[str, float], *, provenance: str, sources: Mapping[str, str] | None = None) -> ModelParams:
        values, prov, src = dict(self.values), dict(self.provenance), dict(self.sources)
        for key, value in updates.items():
            values[key] = float(value)
            prov[key] = provenance
            src[key] = (sources or {}).get(key, "")
        return ModelParams(values=values, provenance=prov, sources=src, ignored=self.ignored)

    # ---- lookups -----------------------------------------------------------------------------
    def get(self, key: str, default: float | None = None) -> float | None:
        return self.values.get(key, default)

    def link_efficiency(self, kind: str, generation: str | None = None, link_id: str | None = None) -> float:
        """Efficiency of a link: per element, then an explicitly set generation or kind key, then the
        generation default, then the kind default (see the module docstring)."""
        if link_id is not None:
            own = self.per_link_efficiency(link_id)
            if own is not None:
                return own
        gen = generation_key(kind, generation)
        gen_key = f"link_efficiency.{gen}" if gen else None
        kind_key = f"link_efficiency.{kind}"
        for candidate in (gen_key, kind_key):
            if candidate and candidate in self.values and not self.is_default(candidate):
                return float(self.values[candidate])
        if gen_key and gen_key in self.values:
            return float(self.values[gen_key])
        return float(self.values.get(kind_key, 1.0))

    def per_link_efficiency(self, link_id: str) -> float | None:
        """The ``link_efficiency.link.<a>|<b>`` key of one link (``link_id`` ``a|b``, either order), None where unset."""
        for key in (f"link_efficiency.link.{link_id}", f"link_efficiency.link.{'|'.join(reversed(link_id.split('|')))}"):
            if key in self.values:
                return float(self.values[key])
        return None

    def is_default(self, key: str) -> bool:
        """True when ``key`` holds the built-in default (not set by a topology, calibration or user)."""
        d = _DEFAULTS.get(key)
        return d is not None and self.values.get(key) == d[0] and self.provenance.get(key) == d[1]

    def element_transit(self, device: Any) -> tuple[float, float]:
        """(bandwidth factor, latency µs) a device adds to a transfer passing through it: per-element
        key, else the device's own attributes (a preset fact), else its kind's default."""
        kind = device.kind.value
        attrs = device.attributes or {}
        eff = self.values.get(f"p2p_transit_efficiency.device.{device.id}")
        if eff is None:
            raw = attrs.get("p2p_transit_efficiency")
            eff = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else self.transit_efficiency(kind)
        lat = self.values.get(f"transit_latency_us.device.{device.id}")
        if lat is None:
            raw = attrs.get("transit_latency_us")
            lat = (float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool)
                   else float(self.values.get(f"transit_latency_us.{kind}", 0.0)))
        return float(eff), float(lat)

    def level_overhead_us(self, method: str, level_family: str) -> float:
        return float(self.values.get(f"overhead_us.{method}@{level_family}", 0.0))

    def method_efficiency(self, method: str) -> float:
        return float(self.values.get(f"method_efficiency.{method}", 1.0))

    def overhead_us(self, method: str) -> float:
        return float(self.values.get(f"overhead_us.{method}", 0.0))

    def engine_cap_gb_per_s(self, vendor: str | None) -> float:
        if not vendor:
            return float("inf")
        return float(self.values.get(f"engine_cap_gb_per_s.{vendor.lower()}", float("inf")))

    def copy_engine_queue(self, vendor: str | None) -> bool:
        """Whether a GPU of ``vendor`` serves its concurrent copy-engine peer copies one at a time."""
        return bool(vendor) and float(self.values.get(f"copy_engine_queue.{str(vendor).lower()}", 0.0)) > 0

    def host_memcpy_gb_per_s(self, direction: str) -> float:
        """One host thread's copy rate to (``h2d``) or from (``d2h``) the staging buffer: the direction
        key, else the plain ``host_memcpy_gb_per_s`` where a topology or calibration set it (older
        files name one rate for both), else the direction's default."""
        key = f"host_memcpy_gb_per_s.{direction}"
        if key in self.values and not self.is_default(key):
            return float(self.values[key])
        if not self.is_default("host_memcpy_gb_per_s"):
            return float(self.values["host_memcpy_gb_per_s"])
        return float(self.values[key])

    def transit_efficiency(self, kind: str) -> float:
        return float(self.values.get(f"p2p_transit_efficiency.{kind}", 1.0))

    def __getitem__(self, key: str) -> float:
        for used in _RECORDING.get():
            used.add(key)
        try:
            return float(self.values[key])
        except KeyError:
            raise ConfigError(f"unknown model parameter {key!r}", hint=f"valid: {', '.join(sorted(self.values))}") from None

    # ---- output ---------------------------------------------------------------------------------
    def to_model_params(self, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """JSON form for Topology.model_params: ``{key: {"value", "provenance", "source"}}``."""
        chosen = sorted(self.values) if keys is None else list(keys)
        return {
            k: {"value": self.values[k], "provenance": self.provenance.get(k, "user"), "source": self.sources.get(k, "")}
            for k in chosen
            if k in self.values
        }
