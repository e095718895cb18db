"""The GPU facts table: one cited row per GPU model, looked up by product name or PCI id.

What a row holds (units in the names; None = not documented where we looked, never a guess):

* memory: capacity and peak bandwidth (datasheet);
* the device-local copy a copy engine or kernel reaches (``local_copy_gb_per_s``: bytes copied / time,
  as nvbandwidth's ``device_local_copy`` prints it; the copy reads and writes, so memory carries twice
  that). Measured where a recording exists (cited with its file); elsewhere the efficiency measured on
  Hopper (``ASSUMED_LOCAL_COPY_EFFICIENCY``) applied to the datasheet bandwidth, labelled ``assumed``;
* the host link: PCIe generation and lanes of the GPU (rate from ``topology.pcie``);
* NVLink generation, link count and per-link GB/s per direction; xGMI (Infinity Fabric) links and
  per-link GB/s per direction; NVLink-C2C GB/s per direction (Grace Hopper / Grace Blackwell);
* copy engines: the count CUDA exposes (``asyncEngineCount``, deviceQuery's "Yes with N copy engine(s)"),
  the engines a process can drive at once, cited per row from a public deviceQuery output; None where none
  was found (vendors do not publish the physical count, which can be larger); architecture;
  the latency class with the measured
  peer remote-read and host-read pointer-chase latencies where a recording exists;
* ``sources``: field name -> citation (datasheet or whitepaper title / URL, or a measured file).

``gpu_facts(name_or_pci_id)`` matches NVML / amdsmi / lspci product names ("NVIDIA H100 80GB HBM3",
"Tesla V100-SXM2-16GB", "GH100 [H200 SXM 141GB]", "AMD Instinct MI250X/MI250") and PCI ids
("10de:2335", NVML's "0x233510DE"), and returns None for a model it does not know: callers say
"no facts for GPU model X" (``no_facts_reason``) instead of borrowing another model's figure.

A bare family name means the part a cluster most often has: ``H100`` is the SXM5 80 GB, ``A100`` the
SXM4 40 GB (80 GB when the name says 80GB), ``V100`` the SXM2, ``P100`` the SXM2, ``GH200`` the 96 GB
HBM3 part. Names with a variant suffix the table does not know (``RTX 3090 Ti``, ``H100 SXM5 94GB``,
``H800 PCIe``, ``L40``) return None.

>>> gpu_facts("NVIDIA H200").key
'h200-sxm'
>>> gpu_facts("10de:2330").key
'h100-sxm'
>>> gpu_facts("NVIDIA GeForce RTX 3090 Ti") is None
True
"""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from .model import Device, DeviceKind
from .pcie import pcie_gen_gb_per_s

__all__ = ["ASSUMED_LOCAL_COPY_EFFICIENCY", "GPU_FACTS", "GpuFacts", "facts_of_device", "facts_table_markdown", "gpu_facts",
           "gpu_facts_by_key", "no_facts_reason"]

# ---- measured facts (recordings of this project) --------------------------------------------------------
_H200_REC = "../shared/recordings/h200x4-2026-11-28"
_H100_FIX = "tests/fixtures/peertools/h100x2/nvbandwidth.txt"
_H200_LOCAL = (f"measured: nvbandwidth v0.8 device_local_copy 2078.38-2084.94 GB/s on 4 x H200 "
               f"({_H200_REC}/nvbandwidth-all.txt; linkscope survey local 2079-2089, {_H200_REC}/linkscope/survey.json)")
_H100_LOCAL = f"measured: nvbandwidth v0.8 device_local_copy 1489.24 and 1490.79 GB/s on 2 x H100 80GB HBM3 ({_H100_FIX})"
_H200_LAT = (f"measured: nvbandwidth v0.8 device_to_device_latency_sm 826.3-831.7 ns, host_device_latency_sm "
             f"1190.7-1206.5 ns on 4 x H200 NV18 ({_H200_REC}/nvbandwidth-all.txt)")
_H100_LAT = (f"measured: nvbandwidth v0.8 device_to_device_latency_sm 826.08 and 827.52 ns, host_device_latency_sm "
             f"1202.82 and 1217.72 ns on 2 x H100 NV18 ({_H100_FIX}); linkscope survey remote-read 0.824-0.852 us, "
             "host-read 1.18-1.26 us on three leases (docs/runs/survey-h100x2-2026-11-25.json, -run2.json, "
             "tests/fixtures/peertools/h100x2-visits11-13/visit13/linkscope/survey.json)")
_H100_FLAG = ("measured: linkscope survey flag-pingpong 0.841-0.877 us on 2 x H100 NV18, three leases "
              "(docs/runs/survey-h100x2-2026-11-25.json, survey-h100x2-2026-11-25-run2.json, "
              "tests/fixtures/peertools/h100x2-visits11-13/visit13/linkscope/survey.json): middle 0.86")
_H200_FLAG = ("measured: linkscope survey flag-pingpong 0.594-0.730 us on H200 NV18, three leases (2 x H200: "
              "docs/runs/survey-h200x2-2026-11-22.json 0.617, survey-512MiB-h200x2-2026-11-22.json 0.594-0.598; "
              f"4 x H200: {_H200_REC}/linkscope/survey.json 0.646-0.730): middle 0.66")

ASSUMED_LOCAL_COPY_EFFICIENCY = 0.878
"""Share of the datasheet memory bandwidth a device-local copy's read + write traffic reaches, for models
with no measured copy: the mean of the two measured Hopper parts, H200 2 x 2080 / 4800 = 0.867 and
H100 SXM 2 x 1490 / 3350 = 0.889 (sources above). Labelled ``assumed`` on every row that uses it."""
_ASSUMED_EFF_SOURCE = ("assumed: Hopper's measured local-copy efficiency 0.878 (H200 0.867, H100 SXM 0.889: "
                       f"{_H200_REC}/nvbandwidth-all.txt, {_H100_FIX}) applied to the datasheet bandwidth")

# ---- vendor documents -----------------------------------------------------------------------------------
_K80 = "NVIDIA Tesla K80 board specification BD-07317-001 (480 GB/s and 24 GB for the board's two GK210, PCIe Gen3 x16)"
_P100 = ("NVIDIA Tesla P100 datasheet (SXM2 16 GB 732 GB/s, NVLink 160 GB/s; PCIe 16 GB 732 GB/s, 12 GB 549 GB/s, "
         "PCIe Gen3 x16); NVIDIA Tesla P100 whitepaper (GP100: four NVLink 1.0 links, 20 GB/s per direction each)")
_V100 = ("NVIDIA Tesla V100 datasheet (900 GB/s, NVLink 300 GB/s, PCIe Gen3 x16; V100S PCIe 1134 GB/s); "
         "NVIDIA Tesla V100 GPU architecture whitepaper (six NVLink 2.0 links, 25 GB/s per direction each)")
_A100 = ("NVIDIA A100 Tensor Core GPU datasheet (SXM4 40 GB 1555 GB/s, SXM4 80 GB 2039 GB/s, PCIe 40 GB 1555 GB/s, "
         "PCIe 80 GB 1935 GB/s; NVLink 600 GB/s, PCIe: NVLink bridge for 2 GPUs 600 GB/s; PCIe Gen4 64 GB/s); "
         "NVIDIA A100 Tensor Core GPU architecture whitepaper (12 NVLink 3.0 links, 25 GB/s per direction each)")
_GA102 = ("NVIDIA Ampere GA102 GPU architecture whitepaper, 'Third-Generation NVLink' (four x4 links, each 14.0625 "
          "GB/s per direction between two GPUs, 112.5 GB/s total; RTX 3090 936 GB/s GDDR6X; PCIe Gen4)")
_A40 = "NVIDIA A40 datasheet (48 GB GDDR6, 696 GB/s, NVLink 112.5 GB/s bidirectional, PCIe Gen4 x16)"
_A6000 = "NVIDIA RTX A6000 datasheet (48 GB GDDR6, 768 GB/s, NVLink 112.5 GB/s bidirectional, PCIe Gen4 x16)"
_L40S = "NVIDIA L40S datasheet (48 GB GDDR6, 864 GB/s, PCIe Gen4 x16, no NVLink)"
_ADA = ("NVIDIA Ada GPU architecture whitepaper (RTX 4090: 24 GB GDDR6X, 1008 GB/s, PCIe Gen4, no NVLink); "
        "NVIDIA RTX 6000 Ada Generation datasheet (48 GB GDDR6, 960 GB/s, PCIe Gen4 x16, no NVLink)")
_GTX1080 = ("NVIDIA GeForce GTX 1080 whitepaper (https://international.download.nvidia.com/geforce-com/international/pdfs/"
            "GeForce_GTX_1080_Whitepaper_FINAL.pdf: GP104, 8 GB GDDR5X at 10 Gb/s on a 256-bit bus = 320 GB/s, PCI Express "
            "3.0; SLI over the SLI HB bridge, no NVLink)")
_TURING = ("NVIDIA Turing GPU architecture whitepaper (https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/"
           "technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf: RTX 2080 Ti 11 GB GDDR6 at 14 Gb/s on "
           "352 bits = 616 GB/s, PCI Express 3.0; TU102 two x8 NVLink links, 25 GB/s per direction each, 100 GB/s total "
           "bidirectional between two GPUs)")
_H20 = ("no public NVIDIA datasheet for the H20 (a China-market Hopper part); third-party spec listings: 96 GB HBM3, "
        "4.0 TB/s (https://huggingface.co/hardware/h20: 96 GB; https://willitrunai.com/es/gpus/h20-96gb: 96 GB HBM3 "
        "4,000 GB/s, NVLink 4.0 900 GB/s); NVLink 900 GB/s bidirectional (DeepEP maintainer, "
        "https://github.com/deepseek-ai/DeepEP/issues/16); 18 links: nvidia-smi topo -m shows NV18 between H20s "
        "(https://github.com/deepseek-ai/DeepEP/issues/303)")
_H20_3E = ("H20-3e: 141 GB HBM3e, 4.8 TB/s as the poster of https://github.com/NVIDIA/nvbandwidth/issues/48 quotes NVIDIA's "
           "figure (no public NVIDIA datasheet); NVLink as the H20 (" + _H20.split("; NVLink ", 1)[1])
_H20_3E_LOCAL = ("measured (public): nvbandwidth v0.8 device_local_copy 1115.72-1117.17 GB/s on 8 x H20-3e "
                 "(https://github.com/NVIDIA/nvbandwidth/issues/48; the maintainer: a copy's one side, 2.2 TB/s of memory "
                 "traffic): 0.46 of the quoted 4.8 TB/s, so Hopper's assumed efficiency is not used for the H20 parts")
# copy engines CUDA exposes (cudaDeviceProp.asyncEngineCount, deviceQuery's "Concurrent copy and kernel execution:
# Yes with N copy engine(s)"): the engines a process can drive concurrently, not the physical count (an H100 has more)
_CE_H100 = ("asyncEngineCount 3: deviceQuery 'Yes with 3 copy engine(s)' on NVIDIA H100 80GB HBM3 (github.com/thamada/"
            "nvidia-smi @03fbe6e nvsim/H100SXMx8_deviceQuery.py, a captured 8 x H100 SXM deviceQuery)")
_CE_A100 = ("asyncEngineCount 3: 'Concurrent copy and kernel execution: Yes with 3 copy engine(s)' on NVIDIA A100-SXM4-40GB "
            "(github.com/pc2/GPUInspector.jl @83ce4ac docs/src/examples/gpuinfo.md, a DGX with 8 x A100)")
_CE_RTX4090 = ("asyncEngineCount 2: deviceQuery 'Yes with 2 copy engine(s)' on NVIDIA GeForce RTX 4090 (github.com/thamada/"
               "nvidia-smi @b09ef13 gls/RTX4090_deviceQuery.py)")
_THAMADA = "github.com/thamada/nvidia-smi @c4c8a46 gls/"  # captured deviceQuery outputs, one file per machine
_CE_V100 = ("asyncEngineCount 6: deviceQuery 'Yes with 6 copy engine(s)' on Tesla V100-SXM2-32GB (github.com/pc2/"
            "GPUInspector.jl @83ce4ac docs/src/devices/v100_sxm2.md; the same on 8 x Tesla V100-SXM2-16GB in a public "
            "captured deviceQuery)")
_CE_A100_80 = (f"asyncEngineCount 3: deviceQuery 'Yes with 3 copy engine(s)' on 4 x NVIDIA A100-SXM4-80GB "
               f"({_THAMADA}A100SXMx4_deviceQuery.py)")
_CE_H100_NVL = f"asyncEngineCount 3: deviceQuery 'Yes with 3 copy engine(s)' on 2 x NVIDIA H100 NVL ({_THAMADA}H100NVLx2_deviceQuery.py)"
_CE_L40S = f"asyncEngineCount 2: deviceQuery 'Yes with 2 copy engine(s)' on NVIDIA L40S ({_THAMADA}L40S_deviceQuery.py)"
_CE_RTX6000ADA = (f"asyncEngineCount 2: deviceQuery 'Yes with 2 copy engine(s)' on 8 x NVIDIA RTX 6000 Ada Generation "
                  f"({_THAMADA}RTX6000Ada_x8_deviceQuery.py)")
# A40: left None, the public outputs disagree (3 on 10 x A40 in github.com/thamada/nvidia-smi @c4c8a46
# gls/A40x10_deviceQuery.py, 2 in
# github.com/pc2/GPUInspector.jl @ff98b71 docs/src/devices/a40.md): the count CUDA exposes moves with the driver
_CE_RTX3090 = ("asyncEngineCount 2: 'Async Engine Count (DMA engines): 2' on NVIDIA GeForce RTX 3090 (github.com/"
               "Jumperkables/cuda-benchmarking @76861ca 00_deviceQuery/README.md)")
_RTX5090 = "NVIDIA GeForce RTX 5090 specifications, nvidia.com (32 GB GDDR7, 1792 GB/s, PCIe Gen5)"
_RTXPRO6000 = "NVIDIA RTX PRO 6000 Blackwell datasheet (96 GB GDDR7, 1792 GB/s, PCIe Gen5 x16)"
_HOPPER_WP = "NVIDIA H100 Tensor Core GPU architecture whitepaper (18 NVLink 4 links, 900 GB/s total bidirectional)"
_H100 = ("NVIDIA H100 Tensor Core GPU datasheet (SXM 80 GB 3.35 TB/s, NVLink 900 GB/s; PCIe 80 GB 2 TB/s; "
         "NVL 94 GB 3.9 TB/s; PCIe and NVL: NVLink bridge 600 GB/s; PCIe Gen5 128 GB/s)")
_H800 = "NVIDIA H800 product brief (SXM5 80 GB HBM3 3.35 TB/s, NVLink 400 GB/s, PCIe Gen5 x16)"
_H200 = ("NVIDIA H200 Tensor Core GPU datasheet (141 GB HBM3e, 4.8 TB/s; SXM: NVLink 900 GB/s; NVL: 2- or 4-way "
         "NVLink bridge 900 GB/s; PCIe Gen5 128 GB/s)")
_NVML_NVLINK4 = ("26.562 GB/s per link per direction as NVML / nvidia-smi nvlink -s report on H100 and H200 "
                 "(this project's machines; the datasheet's 900 GB/s bidirectional / 18 links / 2 = 25)")
_GH200 = ("NVIDIA GH200 Grace Hopper Superchip datasheet (96 GB HBM3 4 TB/s or 144 GB HBM3e 4.9 TB/s; NVLink-C2C "
          "900 GB/s bidirectional between Grace and Hopper; NVLink 900 GB/s to other GPUs)")
_B200 = ("NVIDIA HGX B200 / DGX B200 datasheet (8 x B200, 1440 GB HBM3e total = 180 GB each, 8 TB/s per GPU, "
         "fifth-generation NVLink 1.8 TB/s per GPU, PCIe Gen5 x16 to the host); NVIDIA Blackwell architecture "
         "technical brief (18 NVLink 5 links, 50 GB/s per direction each)")
_B300 = ("NVIDIA HGX B300 datasheet (8 x B300 Blackwell Ultra, 2.3 TB HBM3e total = 288 GB each, NVLink 5 1.8 TB/s "
         "per GPU; PCIe Gen6 x16 through ConnectX-8); per-GPU memory bandwidth 8 TB/s (NVIDIA Blackwell Ultra "
         "technical blog)")
_GB200 = ("NVIDIA GB200 NVL72 datasheet (72 Blackwell GPUs, 13.4 TB HBM3e = 186 GB each, 576 TB/s = 8 TB/s each; "
          "NVLink 5 1.8 TB/s per GPU; each GB200 superchip joins one Grace and two B200 with 900 GB/s bidirectional "
          "NVLink-C2C)")
_GB10 = ("NVIDIA DGX Spark product page and hardware guide (GB10 Grace Blackwell superchip: 128 GB LPDDR5x unified "
         "CPU/GPU memory, 273 GB/s; ConnectX-7 200 Gb/s), as tabulated at https://ai-infrastructure.net/dgx-spark/ "
         "(verified against NVIDIA's pages, 2026-06); NVLink-C2C between the CPU and GPU dies 600 GB/s bidirectional "
         "(GB10 architect A. Skende, Hot Chips 2025, as reported at https://meterpreter.org/a-supercomputer-on-your-desk-"
         "nvidia-unveils-the-dgx-spark-ai-superchip); no NVLink to other GPUs, no PCIe host link (one package)")
_MI100 = ("AMD Instinct MI100 datasheet (32 GB HBM2, 1228.8 GB/s; three Infinity Fabric links, 276 GB/s peak "
          "aggregate = 92 GB/s bidirectional each; PCIe Gen4 x16), as tabulated at announcement (notebookcheck.net, "
          "'AMD announces CDNA-based Instinct MI100': 'Infinity Fabric Links/Bandwidth 3 / 276 GB/s'); ROCm docs "
          "'AMD Instinct MI100 microarchitecture' (https://rocm.docs.amd.com/en/latest/reference/gpu-arch/mi100.html: "
          "PCIe Gen4 x16, fully connected hive of four)")
_MI210 = ("AMD Instinct MI210 datasheet (64 GB HBM2e, 1638.4 GB/s; up to three Infinity Fabric links, 300 GB/s peak "
          "aggregate = 100 GB/s bidirectional each; PCIe Gen4 x16)")
_MI250X = ("AMD Instinct MI250X datasheet (two GCDs, 128 GB HBM2e, 3276.8 GB/s = 1638.4 per GCD; eight Infinity Fabric "
           "links, 800 GB/s peak aggregate = 50 GB/s per direction each; PCIe Gen4 x16); AMD CDNA 2 whitepaper; ROCm "
           "docs 'AMD Instinct MI250 microarchitecture' (https://rocm.docs.amd.com/en/latest/reference/gpu-arch/mi250.html: "
           "each GPU-GPU Infinity Fabric link up to 25 GT/s = 50 GB/s for a 16-wide link)")
_MI300X = ("AMD Instinct MI300X datasheet (192 GB HBM3, 5.3 TB/s; seven Infinity Fabric links, 128 GB/s bidirectional "
           "each, 896 GB/s aggregate; PCIe Gen5 x16 128 GB/s)")
_MI325X = ("AMD Instinct MI325X datasheet (256 GB HBM3E, 6 TB/s; seven Infinity Fabric links, 128 GB/s bidirectional "
           "each, 896 GB/s aggregate; PCIe Gen5 x16 128 GB/s)")
_MI300X_XGMI_USABLE = ("AMD ROCm blog 'Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X' "
                       "(rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html, section "
                       "'Theoretical Performance Claims vs. Achievable'): 64 GB/s raw per point-to-point link, about "
                       "48 GB/s usable after CRC and protocol overhead (~75%)")
_PCI_IDS = "pci.ids (The PCI ID Repository, pci-ids.ucw.cz): vendor 10de NVIDIA, 1002 AMD"


@dataclass(frozen=True)
class GpuFacts:
    """What a GPU model is, each fact cited in ``sources`` (field name -> citation).

    Attributes:
        key: stable row key (``h100-sxm``).
        name: display name (``NVIDIA H100 SXM5 80GB``).
        vendor: ``nvidia`` or ``amd``.
        architecture: ``Hopper``, ``CDNA 3`` ...
        memory_bytes: device memory (one GCD's on AMD parts with two).
        memory_bw_gb_per_s: peak memory bandwidth per device (per GCD), datasheet, GB/s.
        local_copy_gb_per_s: a device-local copy (bytes copied / time; read + write = twice that on memory).
        local_copy_provenance: ``measured`` (a recording) or ``assumed`` (an efficiency from another model).
        pcie_generation, pcie_lanes: the GPU's host link (None: not on PCIe, e.g. GH200's GPU).
        nvlink_generation, nvlink_links, nvlink_gb_per_s_per_link: NVLink per direction per link.
        xgmi_links, xgmi_gb_per_s_per_link: Infinity Fabric links to peers, per direction per link.
        xgmi_usable_gb_per_s_per_link: what AMD documents as usable of one such link, per direction,
            after CRC and protocol overhead (a ceiling for a measured peer copy, not the link's rate).
        c2c_gb_per_s: NVLink-C2C to the Grace CPU, per direction.
        copy_engines: the copy engines CUDA exposes (``asyncEngineCount``), from a cited deviceQuery output.
        latency_class: architecture family whose latencies apply (``hopper``).
        remote_read_latency_us: peer pointer chase over NVLink through NVSwitch (round trip), measured.
        host_read_latency_us: pointer chase into pinned host memory (round trip), measured.
        flag_pingpong_us: one-way flag ping-pong between two GPUs through NVSwitch (linkscope's survey),
            measured: the middle of the range seen over several leases.
        gcds_per_package: compute dies one package shows as separate devices (MI250X: 2).
        pci_ids: ``vendor:device`` ids (lower-case hex).
        sources: field name -> citation.
    """

    key: str
    name: str
    vendor: str
    architecture: str
    memory_bytes: int | None = None
    memory_bw_gb_per_s: float | None = None
    local_copy_gb_per_s: float | None = None
    local_copy_provenance: str | None = None
    pcie_generation: int | None = None
    pcie_lanes: int | None = None
    nvlink_generation: int | None = None
    nvlink_links: int | None = None
    nvlink_gb_per_s_per_link: float | None = None
    xgmi_links: int | None = None
    xgmi_gb_per_s_per_link: float | None = None
    xgmi_usable_gb_per_s_per_link: float | None = None
    c2c_gb_per_s: float | None = None
    copy_engines: int | None = None
    latency_class: str | None = None
    remote_read_latency_us: float | None = None
    host_read_latency_us: float | None = None
    flag_pingpong_us: float | None = None
    gcds_per_package: int = 1
    pci_ids: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict, hash=False, compare=True)

    @property
    def pcie_gb_per_s(self) -> float | None:
        """Per-direction PCIe rate of the host link (encoding included), GB/s."""
        if self.pcie_generation is None or self.pcie_lanes is None:
            return None
        return pcie_gen_gb_per_s(self.pcie_generation, self.pcie_lanes)

    @property
    def nvlink_gb_per_s(self) -> float | None:
        """All NVLinks of the GPU, per direction, GB/s."""
        if self.nvlink_links is None or self.nvlink_gb_per_s_per_link is None:
            return None
        return self.nvlink_links * self.nvlink_gb_per_s_per_link

    @property
    def local_copy_efficiency(self) -> float | None:
        """Share of the memory bandwidth a local copy's read + write reaches."""
        if self.local_copy_gb_per_s is None or not self.memory_bw_gb_per_s:
            return None
        return 2 * self.local_copy_gb_per_s / self.memory_bw_gb_per_s

    @property
    def copy_memory_gb_per_s(self) -> float | None:
        """Memory traffic a device-local copy drives (read + write = 2 x the copy's rate), GB/s: what the
        twin's device-memory resource carries for ``local`` copies."""
        return None if self.local_copy_gb_per_s is None else 2 * self.local_copy_gb_per_s

    @property
    def nvswitch_hop_latency_us(self) -> float | None:
        """One GPU <-> NVSwitch hop's share of the measured peer remote read: the pointer chase crosses
        GPU -> NVSwitch -> GPU and back (4 hops), so a quarter of it (derived, not measured per hop)."""
        return None if self.remote_read_latency_us is None else self.remote_read_latency_us / 4

    @property
    def flag_base_us(self) -> float | None:
        """The fixed part of a flag ping-pong: the measured one-way flag minus the two NVSwitch hops of the
        route it was measured on (derived; the twin adds the route of the pair it predicts)."""
        hop = self.nvswitch_hop_latency_us
        if self.flag_pingpong_us is None or hop is None:
            return None
        return max(self.flag_pingpong_us - 2 * hop, 0.0)

    def source(self, name: str) -> str:
        """The citation of field ``name`` ("" when the field is not set)."""
        return self.sources.get(name, "")


# ---- rows -----------------------------------------------------------------------------------------------
GiB = 2**30
_FACT_FIELDS = ("memory_bytes", "memory_bw_gb_per_s", "local_copy_gb_per_s", "pcie_generation", "pcie_lanes",
                "nvlink_generation", "nvlink_links", "nvlink_gb_per_s_per_link", "xgmi_links", "xgmi_gb_per_s_per_link",
                "xgmi_usable_gb_per_s_per_link",
                "c2c_gb_per_s", "copy_engines", "remote_read_latency_us", "host_read_latency_us", "flag_pingpong_us",
                "pci_ids")


def _row(key: str, name: str, vendor: str, architecture: str, doc: str, *, memory_gb: float | None = None,
         local_copy: tuple[float, str] | None = None, extra_sources: Mapping[str, str] | None = None,
         assume_local_copy: bool = True, **facts: object) -> GpuFacts:
    """A row whose every set fact cites ``doc`` unless ``extra_sources`` names another source. Without a
    measured ``local_copy`` (value, source), the assumed efficiency gives it from the datasheet bandwidth,
    unless ``assume_local_copy`` is False (a part known not to reach it: the H20s)."""
    sources: dict[str, str] = {}
    values: dict[str, object] = dict(facts)
    if memory_gb is not None:
        values["memory_bytes"] = int(memory_gb * 10**9) if memory_gb % 1 else int(memory_gb) * 10**9
    bw = values.get("memory_bw_gb_per_s")
    if local_copy is not None:
        values["local_copy_gb_per_s"], sources["local_copy_gb_per_s"] = local_copy
        values["local_copy_provenance"] = "measured"
    elif isinstance(bw, (int, float)) and assume_local_copy:
        values["local_copy_gb_per_s"] = round(bw * ASSUMED_LOCAL_COPY_EFFICIENCY / 2, 1)
        values["local_copy_provenance"] = "assumed"
        sources["local_copy_gb_per_s"] = _ASSUMED_EFF_SOURCE
    for name_ in _FACT_FIELDS:
        if values.get(name_) not in (None, ()) and name_ not in sources:
            sources[name_] = doc
    if values.get("pci_ids"):
        sources["pci_ids"] = _PCI_IDS
    sources.update(extra_sources or {})
    return GpuFacts(key=key, name=name, vendor=vendor, architecture=architecture, sources=sources, **values)  # type: ignore[arg-type]


_NV = "nvidia"
_HOPPER_LAT = {"remote_read_latency_us": _H200_LAT, "host_read_latency_us": _H200_LAT, "flag_pingpong_us": _H200_FLAG}

GPU_FACTS: tuple[GpuFacts, ...] = (
    _row("k80", "NVIDIA Tesla K80 (one GK210)", _NV, "Kepler", _K80, memory_gb=12, memory_bw_gb_per_s=240.0,
         pcie_generation=3, pcie_lanes=16, pci_ids=("10de:102d",)),
    _row("gtx-1080", "NVIDIA GeForce GTX 1080", _NV, "Pascal", _GTX1080, memory_gb=8, memory_bw_gb_per_s=320.0,
         pcie_generation=3, pcie_lanes=16, pci_ids=("10de:1b80",)),
    _row("p100-sxm2", "NVIDIA Tesla P100 SXM2 16GB", _NV, "Pascal", _P100, memory_gb=16, memory_bw_gb_per_s=732.0,
         pcie_generation=3, pcie_lanes=16, nvlink_generation=1, nvlink_links=4, nvlink_gb_per_s_per_link=20.0,
         pci_ids=("10de:15f9",)),
    _row("p100-pcie-16gb", "NVIDIA Tesla P100 PCIe 16GB", _NV, "Pascal", _P100, memory_gb=16, memory_bw_gb_per_s=732.0,
         pcie_generation=3, pcie_lanes=16, pci_ids=("10de:15f8",)),
    _row("p100-pcie-12gb", "NVIDIA Tesla P100 PCIe 12GB", _NV, "Pascal", _P100, memory_gb=12, memory_bw_gb_per_s=549.0,
         pcie_generation=3, pcie_lanes=16, pci_ids=("10de:15f7",)),
    _row("v100-sxm2", "NVIDIA Tesla V100 SXM2 (16/32GB)", _NV, "Volta", _V100, memory_gb=16, memory_bw_gb_per_s=900.0,
         pcie_generation=3, pcie_lanes=16, nvlink_generation=2, nvlink_links=6, nvlink_gb_per_s_per_link=25.0,
         copy_engines=6, pci_ids=("10de:1db1", "10de:1db5"), extra_sources={"copy_engines": _CE_V100}),
    _row("v100-pcie", "NVIDIA Tesla V100 PCIe (16/32GB)", _NV, "Volta", _V100, memory_gb=16, memory_bw_gb_per_s=900.0,
         pcie_generation=3, pcie_lanes=16, pci_ids=("10de:1db4", "10de:1db6")),
    _row("v100s-pcie", "NVIDIA Tesla V100S PCIe 32GB", _NV, "Volta", _V100, memory_gb=32, memory_bw_gb_per_s=1134.0,
         pcie_generation=3, pcie_lanes=16, pci_ids=("10de:1df6",)),
    _row("rtx-2080-ti", "NVIDIA GeForce RTX 2080 Ti", _NV, "Turing", _TURING, memory_gb=11, memory_bw_gb_per_s=616.0,
         pcie_generation=3, pcie_lanes=16, nvlink_generation=2, nvlink_links=2, nvlink_gb_per_s_per_link=25.0,
         pci_ids=("10de:1e04", "10de:1e07")),
    _row("a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", _NV, "Ampere", _A100, memory_gb=40, memory_bw_gb_per_s=1555.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=12, nvlink_gb_per_s_per_link=25.0,
         copy_engines=3, pci_ids=("10de:20b0",), extra_sources={"copy_engines": _CE_A100}),
    _row("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB", _NV, "Ampere", _A100, memory_gb=80, memory_bw_gb_per_s=2039.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=12, nvlink_gb_per_s_per_link=25.0,
         copy_engines=3, pci_ids=("10de:20b2",), extra_sources={"copy_engines": _CE_A100_80}),
    _row("a100-pcie-40gb", "NVIDIA A100-PCIE-40GB", _NV, "Ampere", _A100, memory_gb=40, memory_bw_gb_per_s=1555.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=12, nvlink_gb_per_s_per_link=25.0,
         pci_ids=("10de:20f1",)),
    _row("a100-pcie-80gb", "NVIDIA A100 80GB PCIe", _NV, "Ampere", _A100, memory_gb=80, memory_bw_gb_per_s=1935.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=12, nvlink_gb_per_s_per_link=25.0,
         pci_ids=("10de:20b5",)),
    _row("a40", "NVIDIA A40", _NV, "Ampere", _A40, memory_gb=48, memory_bw_gb_per_s=696.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=4, nvlink_gb_per_s_per_link=14.0625,
         pci_ids=("10de:2235",),
         extra_sources={"nvlink_links": _GA102, "nvlink_gb_per_s_per_link": f"{_A40}: 112.5 / 2 directions / 4 links ({_GA102})"}),
    _row("rtx-a6000", "NVIDIA RTX A6000", _NV, "Ampere", _A6000, memory_gb=48, memory_bw_gb_per_s=768.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=4, nvlink_gb_per_s_per_link=14.0625,
         pci_ids=("10de:2230",),
         extra_sources={"nvlink_links": _GA102, "nvlink_gb_per_s_per_link": f"{_A6000}: 112.5 / 2 directions / 4 links ({_GA102})"}),
    _row("rtx-3090", "NVIDIA GeForce RTX 3090", _NV, "Ampere", _GA102, memory_gb=24, memory_bw_gb_per_s=936.0,
         pcie_generation=4, pcie_lanes=16, nvlink_generation=3, nvlink_links=4, nvlink_gb_per_s_per_link=14.0625,
         copy_engines=2, pci_ids=("10de:2204",), extra_sources={"copy_engines": _CE_RTX3090}),
    _row("l40s", "NVIDIA L40S", _NV, "Ada Lovelace", _L40S, memory_gb=48, memory_bw_gb_per_s=864.0,
         pcie_generation=4, pcie_lanes=16, copy_engines=2, pci_ids=("10de:26b9",), extra_sources={"copy_engines": _CE_L40S}),
    _row("rtx-4090", "NVIDIA GeForce RTX 4090", _NV, "Ada Lovelace", _ADA, memory_gb=24, memory_bw_gb_per_s=1008.0,
         pcie_generation=4, pcie_lanes=16, copy_engines=2, pci_ids=("10de:2684",), extra_sources={"copy_engines": _CE_RTX4090}),
    _row("rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation", _NV, "Ada Lovelace", _ADA, memory_gb=48,
         memory_bw_gb_per_s=960.0, pcie_generation=4, pcie_lanes=16, copy_engines=2, pci_ids=("10de:26b1",),
         extra_sources={"copy_engines": _CE_RTX6000ADA}),
    _row("rtx-5090", "NVIDIA GeForce RTX 5090", _NV, "Blackwell", _RTX5090, memory_gb=32, memory_bw_gb_per_s=1792.0,
         pcie_generation=5, pcie_lanes=16),
    _row("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell", _NV, "Blackwell", _RTXPRO6000, memory_gb=96,
         memory_bw_gb_per_s=1792.0, pcie_generation=5, pcie_lanes=16),
    _row("h100-sxm", "NVIDIA H100 SXM5 80GB", _NV, "Hopper", _H100, memory_gb=80, memory_bw_gb_per_s=3350.0,
         local_copy=(1490.0, _H100_LOCAL), pcie_generation=5, pcie_lanes=16, nvlink_generation=4, nvlink_links=18,
         nvlink_gb_per_s_per_link=26.562, latency_class="hopper", remote_read_latency_us=0.827,
         host_read_latency_us=1.21, flag_pingpong_us=0.86, copy_engines=3, pci_ids=("10de:2330",),
         extra_sources={"nvlink_links": _HOPPER_WP, "nvlink_gb_per_s_per_link": _NVML_NVLINK4, "copy_engines": _CE_H100,
                        "remote_read_latency_us": _H100_LAT, "host_read_latency_us": _H100_LAT,
                        "flag_pingpong_us": _H100_FLAG}),
    _row("h100-pcie", "NVIDIA H100 PCIe", _NV, "Hopper", _H100, memory_gb=80, memory_bw_gb_per_s=2000.0,
         pcie_generation=5, pcie_lanes=16, nvlink_generation=4, nvlink_links=12, nvlink_gb_per_s_per_link=25.0,
         latency_class="hopper", pci_ids=("10de:2331",),
         extra_sources={"nvlink_links": f"{_H100}: 600 GB/s bidirectional / 2 / 25 GB/s per NVLink 4 link ({_HOPPER_WP})"}),
    _row("h100-nvl", "NVIDIA H100 NVL", _NV, "Hopper", _H100, memory_gb=94, memory_bw_gb_per_s=3900.0,
         pcie_generation=5, pcie_lanes=16, nvlink_generation=4, nvlink_links=12, nvlink_gb_per_s_per_link=25.0,
         latency_class="hopper", copy_engines=3, pci_ids=("10de:2321",),
         extra_sources={"nvlink_links": f"{_H100}: 600 GB/s bidirectional / 2 / 25 GB/s per NVLink 4 link ({_HOPPER_WP})",
                        "copy_engines": _CE_H100_NVL}),
    _row("h20", "NVIDIA H20 (96 GB HBM3)", _NV, "Hopper", _H20, memory_gb=96, memory_bw_gb_per_s=4000.0,
         assume_local_copy=False, nvlink_generation=4, nvlink_links=18, nvlink_gb_per_s_per_link=25.0,
         latency_class="hopper"),
    _row("h20-3e", "NVIDIA H20-3e (141 GB HBM3e)", _NV, "Hopper", _H20_3E, memory_gb=141, memory_bw_gb_per_s=4800.0,
         local_copy=(1116.0, _H20_3E_LOCAL), nvlink_generation=4, nvlink_links=18, nvlink_gb_per_s_per_link=25.0,
         latency_class="hopper"),
    _row("h800-sxm", "NVIDIA H800 SXM5 80GB", _NV, "Hopper", _H800, memory_gb=80, memory_bw_gb_per_s=3350.0,
         pcie_generation=5, pcie_lanes=16, nvlink_generation=4, nvlink_links=8, nvlink_gb_per_s_per_link=25.0,
         latency_class="hopper", pci_ids=("10de:2324",),
         extra_sources={"nvlink_links": f"{_H800}: 400 GB/s bidirectional / 2 / 25 GB/s per NVLink 4 link"}),
    _row("h200-sxm", "NVIDIA H200 SXM 141GB", _NV, "Hopper", _H200, memory_gb=141, memory_bw_gb_per_s=4800.0,
         local_copy=(2080.0, _H200_LOCAL), pcie_generation=5, pcie_lanes=16, nvlink_generation=4, nvlink_links=18,
         nvlink_gb_per_s_per_link=26.562, latency_class="hopper", remote_read_latency_us=0.828,
         host_read_latency_us=1.196, flag_pingpong_us=0.66, pci_ids=("10de:2335",),
         extra_sources={"nvlink_links": _HOPPER_WP, "nvlink_gb_per_s_per_link": _NVML_NVLINK4, **_HOPPER_LAT}),
    _row("h200-nvl", "NVIDIA H200 NVL", _NV, "Hopper", _H200, memory_gb=141, memory_bw_gb_per_s=4800.0,
         pcie_generation=5, pcie_lanes=16, nvlink_generation=4, nvlink_links=18, nvlink_gb_per_s_per_link=25.0,
         latency_class="hopper", pci_ids=("10de:233b",), extra_sources={"nvlink_links": _HOPPER_WP}),
    _row("gh200-96gb", "NVIDIA GH200 480GB (96 GB HBM3)", _NV, "Hopper", _GH200, memory_gb=96,
         memory_bw_gb_per_s=4000.0, nvlink_generation=4, nvlink_links=18, nvlink_gb_per_s_per_link=25.0,
         c2c_gb_per_s=450.0, latency_class="hopper", extra_sources={"nvlink_links": _HOPPER_WP}),
    _row("gh200-144gb", "NVIDIA GH200 144GB HBM3e", _NV, "Hopper", _GH200, memory_gb=144,
         memory_bw_gb_per_s=4900.0, nvlink_generation=4, nvlink_links=18, nvlink_gb_per_s_per_link=25.0,
         c2c_gb_per_s=450.0, latency_class="hopper", extra_sources={"nvlink_links": _HOPPER_WP}),
    _row("b200", "NVIDIA B200", _NV, "Blackwell", _B200, memory_gb=180, memory_bw_gb_per_s=8000.0,
         pcie_generation=5, pcie_lanes=16, nvlink_generation=5, nvlink_links=18, nvlink_gb_per_s_per_link=50.0),
    _row("b300", "NVIDIA B300", _NV, "Blackwell Ultra", _B300, memory_gb=288, memory_bw_gb_per_s=8000.0,
         pcie_generation=6, pcie_lanes=16, nvlink_generation=5, nvlink_links=18, nvlink_gb_per_s_per_link=50.0,
         extra_sources={"nvlink_links": _B200}),
    _row("gb200", "NVIDIA GB200 (one Blackwell GPU)", _NV, "Blackwell", _GB200, memory_gb=186,
         memory_bw_gb_per_s=8000.0, nvlink_generation=5, nvlink_links=18, nvlink_gb_per_s_per_link=50.0,
         c2c_gb_per_s=450.0, extra_sources={"nvlink_links": _B200}),
    _row("gb10", "NVIDIA GB10 (DGX Spark)", _NV, "Blackwell", _GB10, memory_gb=128, memory_bw_gb_per_s=273.0,
         c2c_gb_per_s=300.0),
    _row("mi100", "AMD Instinct MI100", "amd", "CDNA", _MI100, memory_gb=32, memory_bw_gb_per_s=1228.8,
         pcie_generation=4, pcie_lanes=16, xgmi_links=3, xgmi_gb_per_s_per_link=46.0, pci_ids=("1002:738c",)),
    _row("mi210", "AMD Instinct MI210", "amd", "CDNA 2", _MI210, memory_gb=64, memory_bw_gb_per_s=1638.4,
         pcie_generation=4, pcie_lanes=16, xgmi_links=3, xgmi_gb_per_s_per_link=50.0, pci_ids=("1002:740f",)),
    _row("mi250x", "AMD Instinct MI250X (one GCD)", "amd", "CDNA 2", _MI250X, memory_gb=64, memory_bw_gb_per_s=1638.4,
         pcie_generation=4, pcie_lanes=16, xgmi_links=8, xgmi_gb_per_s_per_link=50.0, gcds_per_package=2,
         pci_ids=("1002:740c",)),
    _row("mi300x", "AMD Instinct MI300X", "amd", "CDNA 3", _MI300X, memory_gb=192, memory_bw_gb_per_s=5300.0,
         pcie_generation=5, pcie_lanes=16, xgmi_links=7, xgmi_gb_per_s_per_link=64.0, xgmi_usable_gb_per_s_per_link=48.0,
         extra_sources={"xgmi_usable_gb_per_s_per_link": _MI300X_XGMI_USABLE}, pci_ids=("1002:74a1",)),
    _row("mi325x", "AMD Instinct MI325X", "amd", "CDNA 3", _MI325X, memory_gb=256, memory_bw_gb_per_s=6000.0,
         pcie_generation=5, pcie_lanes=16, xgmi_links=7, xgmi_gb_per_s_per_link=64.0, pci_ids=("1002:74a5",)),
)

_BY_KEY = {f.key: f for f in GPU_FACTS}
_BY_PCI_ID = {pid: f for f in GPU_FACTS for pid in f.pci_ids}


def gpu_facts_by_key(key: str) -> GpuFacts | None:
    return _BY_KEY.get(key)


# ---- name matching --------------------------------------------------------------------------------------
# Words that say nothing about which model it is (vendor, brand, memory type, form factor of the only
# form factor a model has, lspci/amdsmi decorations). A chip code (GH100, GA102GL, AD102, GB202, GK210)
# is dropped too: the product inside the brackets or after it names the part.
_NOISE = frozenset({
    "nvidia", "corporation", "corp", "tesla", "geforce", "amd", "ati", "advanced", "micro", "devices", "inc",
    "instinct", "graphics", "gpu", "accelerator", "rev", "a1", "oam", "module", "edition", "workstation", "server",
    "generation", "sxm", "sxm2", "sxm4", "sxm5", "sxm6", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x",
    "gddr7", "gcd", "vf", "ac", "3d", "controller", "aldebaran", "mi200", "arcturus", "gl", "xl", "aqua", "vanjaram",
})
_CHIP = re.compile(r"(?:gk|gp|gv|ga|gh|ad|tu)1[0-9]{2}[a-z]*|gb(?:10[0-9]|20[1-9])[a-z]*")
_MEMORY = re.compile(r"([0-9]{1,4})(?:gb|g)")
_PCI = re.compile(r"(?:0x)?([0-9a-f]{4})\s*[:\s]\s*(?:0x)?([0-9a-f]{4})")
_NVML_PCI = re.compile(r"0x([0-9a-f]{4})([0-9a-f]{4})")

# significant words -> {memory size word or None: row key}; None stands for "no size given"
_ALIASES: dict[str, dict[int | None, str]] = {
    "k80": {None: "k80", 12: "k80", 24: "k80"},
    "p100": {None: "p100-sxm2", 16: "p100-sxm2"},
    "p100 pcie": {None: "p100-pcie-16gb", 16: "p100-pcie-16gb", 12: "p100-pcie-12gb"},
    "v100": {None: "v100-sxm2", 16: "v100-sxm2", 32: "v100-sxm2"},
    "v100 pcie": {None: "v100-pcie", 16: "v100-pcie", 32: "v100-pcie"},
    "v100s": {None: "v100s-pcie", 32: "v100s-pcie"},
    "v100s pcie": {None: "v100s-pcie", 32: "v100s-pcie"},
    "a100": {None: "a100-sxm4-40gb", 40: "a100-sxm4-40gb", 80: "a100-sxm4-80gb"},
    "a100 pcie": {None: "a100-pcie-40gb", 40: "a100-pcie-40gb", 80: "a100-pcie-80gb"},
    "a40": {None: "a40", 48: "a40"},
    "rtx a6000": {None: "rtx-a6000", 48: "rtx-a6000"},
    "rtx 3090": {None: "rtx-3090", 24: "rtx-3090"},
    "l40s": {None: "l40s", 48: "l40s"},
    "rtx 4090": {None: "rtx-4090", 24: "rtx-4090"},
    "rtx 6000 ada": {None: "rtx-6000-ada", 48: "rtx-6000-ada"},
    "rtx 5090": {None: "rtx-5090", 32: "rtx-5090"},
    "rtx pro 6000": {None: "rtx-pro-6000", 96: "rtx-pro-6000"},
    "rtx pro 6000 blackwell": {None: "rtx-pro-6000", 96: "rtx-pro-6000"},
    "h100": {None: "h100-sxm", 80: "h100-sxm"},
    "h100 pcie": {None: "h100-pcie", 80: "h100-pcie"},
    "h100 nvl": {None: "h100-nvl", 94: "h100-nvl", 96: "h100-nvl"},
    "h800": {None: "h800-sxm", 80: "h800-sxm"},
    "h20": {None: "h20", 96: "h20"},
    "h20 3e": {None: "h20-3e", 141: "h20-3e"},
    "gtx 1080": {None: "gtx-1080", 8: "gtx-1080"},
    "rtx 2080 ti": {None: "rtx-2080-ti", 11: "rtx-2080-ti"},
    "rtx 2080 ti a": {None: "rtx-2080-ti", 11: "rtx-2080-ti"},  # lspci: "[GeForce RTX 2080 Ti Rev. A]"
    "h200": {None: "h200-sxm", 141: "h200-sxm", 143: "h200-sxm"},
    "h200 nvl": {None: "h200-nvl", 141: "h200-nvl"},
    "gh200": {None: "gh200-96gb", 96: "gh200-96gb", 480: "gh200-96gb", 144: "gh200-144gb", 624: "gh200-144gb"},
    "b200": {None: "b200", 180: "b200", 192: "b200"},
    "b300": {None: "b300", 288: "b300"},
    "gb200": {None: "gb200", 186: "gb200", 192: "gb200"},
    "gb10": {None: "gb10", 128: "gb10"},
    "mi100": {None: "mi100", 32: "mi100"},
    "mi210": {None: "mi210", 64: "mi210"},
    "mi250x": {None: "mi250x", 64: "mi250x", 128: "mi250x"},
    "mi250x mi250": {None: "mi250x", 64: "mi250x", 128: "mi250x"},
    "mi300x": {None: "mi300x", 192: "mi300x"},
    "mi325x": {None: "mi325x", 256: "mi325x"},
}
MAX_NAME_CHARS = 256


def _words(name: str) -> tuple[str, int | None]:
    """Significant words of a product name and the memory size it states (GB), for ``_ALIASES``."""
    text = name.lower()[:MAX_NAME_CHARS]
    bracket = re.search(r"\[([^\]]*)\]", text)  # lspci: "GH100 [H200 SXM 141GB] (rev a1)"
    if bracket:
        text = bracket.group(1)
    text = re.sub(r"\([^)]*\)", " ", text)  # "(one GK210)", "(GCD)", "(rev a1)"
    words: list[str] = []
    memory: int | None = None
    for word in re.split(r"[^a-z0-9]+", text):
        if not word or word in _NOISE or _CHIP.fullmatch(word):
            continue
        size = _MEMORY.fullmatch(word)
        if size:
            memory = int(size.group(1))
            continue
        words.append(word)
    return " ".join(words), memory


def gpu_facts(name_or_pci_id: str | None) -> GpuFacts | None:
    """The facts row of a GPU product name or PCI id (``10de:2335``, ``0x233510DE``); None when unknown."""
    if not isinstance(name_or_pci_id, str) or not name_or_pci_id.strip():
        return None
    return _lookup(name_or_pci_id.strip().lower()[:MAX_NAME_CHARS])


@functools.lru_cache(maxsize=4096)  # the twin asks once per GPU of a topology (32768 on the largest clusters)
def _lookup(text: str) -> GpuFacts | None:
    if text in _BY_KEY:
        return _BY_KEY[text]
    packed = _NVML_PCI.fullmatch(text)  # NVML pciDeviceId: device << 16 | vendor
    if packed:
        return _BY_PCI_ID.get(f"{packed.group(2)}:{packed.group(1)}")
    pci = _PCI.fullmatch(text)
    if pci:
        return _BY_PCI_ID.get(f"{pci.group(1)}:{pci.group(2)}")
    words, memory = _words(text)
    sizes = _ALIASES.get(words)
    if sizes is None:
        return None
    key = sizes.get(memory)
    return _BY_KEY[key] if key else None


def facts_of_device(device: Device) -> GpuFacts | None:
    """The facts of a topology device: by its product name, else by the PCI id discovery recorded
    (``attributes["pci_device_id"]`` as NVML gives it, or ``vendor_id``/``device_id`` from sysfs/hwloc)."""
    if device.kind is not DeviceKind.GPU:
        return None
    found = gpu_facts(device.name)
    if found is not None:
        return found
    attrs = device.attributes or {}
    nvml_id = attrs.get("pci_device_id")
    if isinstance(nvml_id, str):
        found = gpu_facts(nvml_id)
    vendor, dev = attrs.get("vendor_id"), attrs.get("device_id")
    if found is None and isinstance(vendor, str) and isinstance(dev, str):
        found = gpu_facts(f"{vendor.lower().removeprefix('0x')}:{dev.lower().removeprefix('0x')}")
    return found


def no_facts_reason(name: str | None) -> str:
    """The one line callers print for a model the table does not know."""
    shown = (name or "").strip()[:80] or "(unnamed)"
    return f"no facts for GPU model {shown!r}"


# ---- docs -----------------------------------------------------------------------------------------------
def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def facts_table_markdown() -> str:
    """The facts table as Markdown (docs/facts.md prints it; a test keeps the two equal)."""
    head = ("| key | name | arch | memory (GB) | memory GB/s | local copy GB/s | PCIe | NVLink (gen x links x GB/s/dir) "
            "| xGMI (links x GB/s/dir) | C2C GB/s/dir | copy engines | remote read / host read / flag us | PCI ids |")
    lines = [head, "|" + " --- |" * 13]
    for f in GPU_FACTS:
        nvlink = (f"{f.nvlink_generation} x {f.nvlink_links} x {_fmt(f.nvlink_gb_per_s_per_link)}"
                  if f.nvlink_links else "-")
        xgmi = f"{f.xgmi_links} x {_fmt(f.xgmi_gb_per_s_per_link)}" if f.xgmi_links else "-"
        pcie = f"Gen{f.pcie_generation} x{f.pcie_lanes}" if f.pcie_generation else "-"
        local = f"{_fmt(f.local_copy_gb_per_s)} ({f.local_copy_provenance})" if f.local_copy_gb_per_s else "-"
        lat = (f"{_fmt(f.remote_read_latency_us)} / {_fmt(f.host_read_latency_us)} / {_fmt(f.flag_pingpong_us)}"
               if f.remote_read_latency_us or f.host_read_latency_us or f.flag_pingpong_us else "-")
        memory = _fmt(f.memory_bytes / 1e9 if f.memory_bytes else None)
        lines.append(f"| {f.key} | {f.name} | {f.architecture} | {memory} | {_fmt(f.memory_bw_gb_per_s)} | {local} | {pcie} "
                     f"| {nvlink} | {xgmi} | {_fmt(f.c2c_gb_per_s)} | {_fmt(f.copy_engines)} | {lat} | {', '.join(f.pci_ids) or '-'} |")
    cited: dict[str, list[str]] = {}
    for f in GPU_FACTS:
        for source in dict.fromkeys(f.sources.values()):
            cited.setdefault(source, []).append(f.key)
    lines += ["", "Sources (each row's `sources` maps every field to one of these):", ""]
    lines += [f"- {source} ({', '.join(keys)})" for source, keys in cited.items()]
    return "\n".join(lines) + "\n"


def _check_rows() -> None:
    """Import-time sanity: unique keys and PCI ids, every set fact cited."""
    assert len(_BY_KEY) == len(GPU_FACTS), "duplicate facts key"
    assert len(_BY_PCI_ID) == sum(len(f.pci_ids) for f in GPU_FACTS), "duplicate PCI id"
    names = {f.name for f in fields(GpuFacts)}
    for f in GPU_FACTS:
        for name_ in _FACT_FIELDS:
            assert name_ in names
            if getattr(f, name_) not in (None, ()):
                assert f.sources.get(name_), f"{f.key}.{name_} has no source"
    for sizes in _ALIASES.values():
        assert all(k in _BY_KEY for k in sizes.values())


_check_rows()
