"""Generator for linkscope preset JSON files: the JSON files are the shipped data, this script writes them.
Run: cd <repo> && PYTHONPATH=src python tools/gen_presets.py   (a test checks the files are in its canonical form)
"""
from __future__ import annotations

from pathlib import Path

from linkscope.topology import io
from linkscope.topology.model import Device, Link, PeerAccess, Topology
from linkscope.topology.model import DeviceKind as K
from linkscope.topology.model import LinkKind as LK
from linkscope.topology.model import Provenance as P

OUT = Path("src/linkscope/topology/presets")
MiB = 1 << 20
GiB = 1 << 30

# PCIe per direction per x16 link: rate x 16 lanes x 128/130 / 8 bits (PCI-SIG encoding); hwloc reports Gen4 x16 as 31.51
PCIE3_X16 = 15.75
PCIE4_X16 = 31.5
PCIE5_X16 = 63.0
PCIE_SRC3 = "PCIe Gen3 x16: 8 GT/s x 16 lanes x 128/130 / 8 = 15.75 GB/s per direction (PCI-SIG base spec encoding)"
PCIE_SRC4 = "PCIe Gen4 x16: 16 GT/s x 16 x 128/130 / 8 = 31.5 GB/s per direction (PCI-SIG; hwloc reports 31.51)"
PCIE_SRC5 = "PCIe Gen5 x16: 32 GT/s x 16 x 128/130 / 8 = 63.0 GB/s per direction (PCI-SIG encoding)"
LAT_PCIE = 0.3
LAT_PCIE_SRC = "latency 0.3 us per PCIe hop: typical"
LAT_UPI = 0.2
LAT_UPI_SRC = "latency 0.2 us: typical socket-interconnect hop"
LAT_NVS = 0.2125
LAT_NVS_SRC = ("latency 0.2125 us per GPU-NVSwitch link: measured on 2 x H200 NV18 (nvidia-h200-x2, 2026-11-22): "
               "the device remote-read round trip of 0.85 us crosses 4 such links (docs/runs/survey-512MiB-h200x2-2026-11-22.json)")


def L(a, b, kind, count, rate, lat, source, gen=None, prov=P.DATASHEET):
    return Link(a=a, b=b, kind=kind, count=count, link_gb_per_s=float(rate), latency_us=lat, provenance=prov,
                source=source, generation=gen)


def cores(*ranges):
    out = []
    for lo, hi in ranges:
        out.extend(range(lo, hi + 1))
    return tuple(out)


def save(t: Topology):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{t.name}.json").write_text(io.dumps(t))
    print("wrote", t.name, len(t.devices), "devices", len(t.links), "links")


# --------------------------------------------------------------------------------------------- hgx-h200-4
def hgx_h200_4():
    nv_src = ("NV18 to every peer (nvidia-smi topo -m on this project's GPU machine); 26.562 GB/s per link per "
              "direction as NVML / nvidia-smi nvlink -s report it; 18 x 26.562 = 478.1 GB/s per GPU per direction. "
              + LAT_NVS_SRC)
    devices = [
        Device(id="cpu0", kind=K.CPU, name="host CPU (model unknown)", numa_node=0, socket=0, cores=cores((0, 63)),
               attributes={"source": "generic: the lent 4-GPU H200 machine is described as having 64 CPU cores; "
                                     "socket, NUMA layout, CPU model and memory bandwidth are unknown",
                           "confidence": "L"}),
        Device(id="nvswitch", kind=K.NVSWITCH, name="NVSwitch plane (3rd gen NVSwitch, NVLink4)",
               attributes={"physical_switches": 4,
                           "source": "NV18 between every GPU pair needs the NVSwitch plane of an HGX H100/H200 "
                                     "8-GPU board (4 third-gen NVSwitch chips); the 4 visible GPUs are probably a "
                                     "slice of such a board",
                           "confidence": "M"}),
    ]
    links = []
    for i in range(4):
        devices.append(Device(id=f"gpu{i}", kind=K.GPU, name="NVIDIA H200", index=i, vendor="nvidia",
                              memory_bytes=143771 * MiB, numa_node=0, ordinals={"nvidia": i}, nvml_index=i,
                              attributes={"form_factor": "SXM5",
                                          "source": "nvidia-smi on this project's machine: NVIDIA H200, 143771 MiB; "
                                                    "NUMA node unknown (0 assumed)"}))
        links.append(L(f"gpu{i}", "nvswitch", LK.NVLINK, 18, 26.562, LAT_NVS, nv_src, "NVLink4", P.OS))
        links.append(L(f"gpu{i}", "cpu0", LK.PCIE, 1, PCIE5_X16, LAT_PCIE,
                       PCIE_SRC5 + "; H200 SXM host interface PCIe Gen5 x16 (NVIDIA H200 datasheet); the PCIe "
                       "switches between GPU and CPU are unknown and not modelled. " + LAT_PCIE_SRC, "PCIe Gen5 x16"))
    return Topology(
        name="hgx-h200-4", devices=tuple(devices), links=tuple(links), source="preset:hgx-h200-4",
        description="HGX H200 with 4 GPUs: 4 x H200 SXM (141 GB HBM3e), NV18 between every pair through the NVSwitch "
                    "plane (478.1 GB/s per direction per GPU), PCIe Gen5 x16 to a generic host (one CPU node; the "
                    "CPU/NUMA layout is not modelled).",
        sources=(
            "nvidia-smi topo -m and nvidia-smi nvlink -s on this project's 4 x H200 machine (NV18, 26.562 GB/s/link)",
            "NVIDIA H200 Tensor Core GPU datasheet (141 GB HBM3e, NVLink 900 GB/s bidirectional, PCIe Gen5 x16)",
            "PCI Express Base Specification 5.0 (32 GT/s, 128b/130b)",
        ),
        notes=(
            "[H] GPU count, NV18 all pairs, 26.562 GB/s per link (as NVML reports), GPU memory",
            "[M] NVSwitch chip count (4, as on 8-GPU HGX H100/H200 boards)",
            "[L] CPU: one generic node with cores 0-63; sockets, NUMA nodes, PCIe switches and NICs unknown "
            "(run linkscope topo on the machine for the real host side)",
        ),
    )


# --------------------------------------------------------------------------------------------- dgx-h100
def dgx_h100():
    compute_nics = {0: "mlx5_0", 1: "mlx5_3", 2: "mlx5_4", 3: "mlx5_5", 4: "mlx5_6", 5: "mlx5_9", 6: "mlx5_10",
                    7: "mlx5_11"}
    storage = {0: ("mlx5_1", "mlx5_2"), 1: ("mlx5_7", "mlx5_8")}
    topo_src = ("nvidia-smi topo -m of a DGX H100 in vllm-project/vllm#6746 (also NVIDIA/nccl#1264, bytedance/flux#14)")
    nv_src = ("NV18 all pairs (" + topo_src + "); 18 NVLink4 per GPU at 25 GB/s per direction nominal "
              "(900 GB/s bidirectional per GPU, NVIDIA), 26.562 GB/s per link as nvidia-smi reports. " + LAT_NVS_SRC)
    devices = [
        Device(id="cpu0", kind=K.CPU, name="Intel Xeon Platinum 8480C", numa_node=0, socket=0,
               cores=cores((0, 55), (112, 167)), memory_bytes=1024 * GiB, memory_bw_gb_per_s=307.2,
               attributes={"physical_cores": 56,
                           "source": "cores: CPU affinity 0-55,112-167 of GPU0-3 in " + topo_src +
                                     "; memory: DGX H100 datasheet 2 TB system memory (half per socket); "
                                     "bandwidth: 8 channels DDR5-4800 x 38.4 GB/s = 307.2 GB/s (Intel ARK, "
                                     "Xeon Platinum 8480+)"}),
        Device(id="cpu1", kind=K.CPU, name="Intel Xeon Platinum 8480C", numa_node=1, socket=1,
               cores=cores((56, 111), (168, 223)), memory_bytes=1024 * GiB, memory_bw_gb_per_s=307.2,
               attributes={"physical_cores": 56,
                           "source": "cores: CPU affinity 56-111,168-223 of GPU4-7 in " + topo_src +
                                     "; memory as cpu0"}),
        Device(id="nvswitch", kind=K.NVSWITCH, name="NVSwitch plane (4 x third-gen NVSwitch)",
               attributes={"physical_switches": 4, "links_per_switch_per_gpu": "5/4/4/5",
                           "source": "DGX H100 user guide / datasheet (4 NVSwitch); per-switch split 5/4/4/5 from "
                                     "aliyun/SimAI#60 [M]"}),
    ]
    links = [L("cpu0", "cpu1", LK.UPI, 4, 32.0, LAT_UPI,
               "Xeon Platinum 8480+: 4 UPI 2.0 links at 16 GT/s (Intel ARK); 16 GT/s x 2 B = 32 GB/s per link per "
               "direction (UPI carries 2 B per transfer per direction: 24 GT/s = 48 GB/s, Wikipedia 'Intel Ultra "
               "Path Interconnect'); all 4 links wired on DGX H100 is an assumption [L]. NCCL models GPU traffic "
               "across SPR UPI at much less. " + LAT_UPI_SRC, "UPI 2.0 16 GT/s")]
    for s in range(2):
        hb = f"hb_stor{s}"
        card = f"stor_card{s}"
        devices.append(Device(id=hb, kind=K.HOST_BRIDGE, name=f"PCIe root port (socket {s})", numa_node=s))
        devices.append(Device(id=card, kind=K.PCIE_SWITCH, name="dual-port ConnectX-7 card (2 PCIe functions)",
                              numa_node=s,
                              attributes={"source": "the two ports of one dual-port card show PIX to each other in "
                                                    + topo_src + "; modelled as one switch level"}))
        links.append(L(hb, f"cpu{s}", LK.PCIE, 1, PCIE5_X16, 0.0, "root port inside the CPU package; Gen5 x16 "
                       "(" + PCIE_SRC5 + "); no extra latency", "PCIe Gen5 x16"))
        links.append(L(card, hb, LK.PCIE, 1, PCIE5_X16, LAT_PCIE, PCIE_SRC5 + "; ConnectX-7 is PCIe Gen5 x16 "
                       "(NVIDIA ConnectX-7 datasheet). " + LAT_PCIE_SRC, "PCIe Gen5 x16"))
        for port, name in enumerate(storage[s]):
            devices.append(Device(id=name, kind=K.NIC, name="ConnectX-7 (dual-port, storage/in-band)",
                                  vendor="mellanox", device_name=name, numa_node=s, line_rate_gbit_per_s=400.0,
                                  attributes={"role": "storage", "port": port + 1,
                                              "source": "DGX H100 datasheet: 2 x dual-port QSFP112 ConnectX-7 up to "
                                                        "400 Gb/s; mlx5 names and NUMA from " + topo_src}))
            links.append(L(name, card, LK.PCIE, 1, PCIE5_X16, 0.0, "port of the card (shares the card's Gen5 x16)",
                           "PCIe Gen5 x16"))
    for i in range(8):
        s = i // 4
        hb, top, gsw, nic = f"hb{i}", f"pcie_sw{i}", f"pcie_sw{i}_gpu", compute_nics[i]
        devices.append(Device(id=f"gpu{i}", kind=K.GPU, name="NVIDIA H100 80GB HBM3", index=i, vendor="nvidia",
                              memory_bytes=81559 * MiB, numa_node=s, ordinals={"nvidia": i}, nvml_index=i,
                              attributes={"form_factor": "SXM5",
                                          "source": "8 x H100 SXM5 80 GB (DGX H100 datasheet); 81559 MiB as "
                                                    "nvidia-smi reports an H100 80GB HBM3; NUMA affinity from "
                                                    + topo_src}))
        devices.append(Device(id=hb, kind=K.HOST_BRIDGE, name=f"PCIe root port (socket {s})", numa_node=s))
        devices.append(Device(id=top, kind=K.PCIE_SWITCH, name="PCIe Gen5 switch", numa_node=s,
                              attributes={"source": "GPU and its compute NIC share a PCIe Gen5 switch complex; "
                                                    "nvidia-smi shows PXB between them (" + topo_src + "), so the "
                                                    "GPU sits one switch level deeper; exact chips not published [M]"}))
        devices.append(Device(id=gsw, kind=K.PCIE_SWITCH, name="PCIe Gen5 switch level (GPU side)", numa_node=s))
        devices.append(Device(id=nic, kind=K.NIC, name="ConnectX-7 (single-port, compute)", vendor="mellanox",
                              device_name=nic, numa_node=s, line_rate_gbit_per_s=400.0,
                              attributes={"role": "compute", "gpu": i,
                                          "source": "DGX H100 datasheet: 8 single-port ConnectX-7 up to 400 Gb/s "
                                                    "(4 OSFP ports); GPU<->NIC pairing (PXB) from " + topo_src +
                                                    ", NIC numbering = mlx5 numbering [M]"}))
        links += [
            L(hb, f"cpu{s}", LK.PCIE, 1, PCIE5_X16, 0.0, "root port inside the CPU package; Gen5 x16 (" + PCIE_SRC5
              + "); no extra latency", "PCIe Gen5 x16"),
            L(top, hb, LK.PCIE, 1, PCIE5_X16, LAT_PCIE, PCIE_SRC5 + ". " + LAT_PCIE_SRC, "PCIe Gen5 x16"),
            L(gsw, top, LK.PCIE, 1, PCIE5_X16, LAT_PCIE, PCIE_SRC5 + ". " + LAT_PCIE_SRC, "PCIe Gen5 x16"),
            L(f"gpu{i}", gsw, LK.PCIE, 1, PCIE5_X16, LAT_PCIE, PCIE_SRC5 + "; H100 SXM5 host interface Gen5 x16. "
              + LAT_PCIE_SRC, "PCIe Gen5 x16"),
            L(nic, top, LK.PCIE, 1, PCIE5_X16, LAT_PCIE, PCIE_SRC5 + "; ConnectX-7 Gen5 x16. " + LAT_PCIE_SRC,
              "PCIe Gen5 x16"),
            L(f"gpu{i}", "nvswitch", LK.NVLINK, 18, 26.562, LAT_NVS, nv_src, "NVLink4", P.DATASHEET),
        ]
    return Topology(
        name="dgx-h100", devices=tuple(devices), links=tuple(links), source="preset:dgx-h100",
        description="NVIDIA DGX H100 (DGX H200 has the same topology with 141 GB GPUs): 8 x H100 SXM5 NV18 through "
                    "4 NVSwitch chips, 2 x Xeon 8480C (NUMA0: GPU0-3, NUMA1: GPU4-7), 8 compute ConnectX-7 400 Gb/s "
                    "each PXB to its GPU, 2 dual-port ConnectX-7 for storage.",
        sources=(
            "NVIDIA DGX H100 datasheet and user guide (8 x H100 80 GB, 4 x NVSwitch, 2 x Xeon Platinum 8480C, 2 TB, "
            "8 x single-port + 2 x dual-port ConnectX-7 400 Gb/s)",
            "vllm-project/vllm#6746 nvidia-smi topo -m (NV18, NIC PXB/NODE/PIX levels, CPU affinity 0-55,112-167 / "
            "56-111,168-223) https://github.com/vllm-project/vllm/issues/6746",
            "NVIDIA/nccl#1264, bytedance/flux#14 (same CPU affinity on other H100 nodes)",
            "aliyun/SimAI#60 (per-NVSwitch link split 5/4/4/5)",
            "Intel ARK Xeon Platinum 8480+ (56 cores, 8 x DDR5-4800, 4 UPI at 16 GT/s)",
            "Wikipedia 'Intel Ultra Path Interconnect' (24 GT/s = 48 GB/s per direction per link)",
            "PCI Express Base Specification 5.0",
        ),
        notes=(
            "[H] GPUs, NV18, NVSwitch count, CPU affinity, GPU<->compute NIC pairing",
            "[M] NIC names = mlx5 numbering; two PCIe switch levels chosen to reproduce PXB; per-switch link split",
            "[L] UPI link count (4 assumed), host memory per socket",
            "HGX H100 servers from other vendors differ (NVIDIA/nccl#1264 shows NIC PIX and other NIC indices)",
        ),
    )


# --------------------------------------------------------------------------------------------- dgx-a100
def dgx_a100():
    topo_src = "NCCL topology XML of a DGX A100 in NVIDIA/nccl#1505"
    # switch complex k: GPUs (2k, 2k+1), compute NICs, NUMA node
    complexes = [(0, ("mlx5_0", "mlx5_1"), 3), (1, ("mlx5_2", "mlx5_3"), 1), (2, ("mlx5_6", "mlx5_7"), 7),
                 (3, ("mlx5_8", "mlx5_9"), 5)]
    nv_src = ("NV12: 12 NVLink3 per GPU, 2 to each of the 6 NVSwitch chips (<nvlink count=\"2\"> x 6 in " + topo_src
              + "); 25 GB/s per link per direction nominal (600 GB/s bidirectional per GPU, NVIDIA A100 datasheet; "
              "nvidia-smi nvlink -s shows 25.781). " + LAT_NVS_SRC)
    devices = []
    links = []
    for n in range(8):
        s = n // 4
        devices.append(Device(
            id=f"cpu{n}", kind=K.CPU, name=f"AMD EPYC 7742 (NPS4 quadrant {n % 4})", numa_node=n, socket=s,
            cores=cores((16 * n, 16 * n + 15), (128 + 16 * n, 128 + 16 * n + 15)), memory_bw_gb_per_s=51.2,
            attributes={"physical_cores": 16,
                        "source": "2 x EPYC 7742 (64 cores, SMT) in NPS4 = 8 NUMA nodes of 16 cores; logical ids "
                                  "as in " + topo_src + " (NUMA3 = 48-63,176-191); 2 of 8 DDR4-3200 channels per "
                                  "quadrant = 51.2 GB/s (AMD EPYC 7742 spec: 8 channels DDR4-3200, 204.8 GB/s)"}))
    for s in range(2):
        nodes = range(4 * s, 4 * s + 4)
        for a in nodes:
            for b in nodes:
                if a < b:
                    links.append(L(f"cpu{a}", f"cpu{b}", LK.UPI, 1, 51.2, 0.1,
                                   "intra-socket Infinity Fabric on the IO die between NPS4 quadrants; capacity "
                                   "assumed = one quadrant's 2 DDR4-3200 channels (51.2 GB/s) [L]; latency 0.1 us "
                                   "typical", "Infinity Fabric (IO die)", P.USER))
    links.append(L("cpu3", "cpu7", LK.UPI, 4, 36.0, LAT_UPI,
                   "EPYC 7002 2-socket: up to 4 xGMI-2 links x16 at up to 18 GT/s = 36 GB/s per link per direction "
                   "(AMD EPYC 7002 platform docs) [L: link count/speed on DGX A100 not published]; NCCL models GPU "
                   "traffic across AMD sockets at 16 GB/s (AMD_BW in src/graph/topo.h). Placed between the "
                   "quadrants holding GPUs; " + LAT_UPI_SRC, "xGMI-2 (AMD socket link)", P.USER))
    devices.append(Device(id="nvswitch", kind=K.NVSWITCH, name="NVSwitch plane (6 x second-gen NVSwitch)",
                          attributes={"physical_switches": 6,
                                      "source": "DGX A100 user guide (6 NVSwitch); 2 links per GPU per switch in "
                                                + topo_src}))
    for k, nics, numa in complexes:
        s = numa // 4
        hb, top = f"hb{k}", f"pcie_sw{k}"
        devices.append(Device(id=hb, kind=K.HOST_BRIDGE, name=f"PCIe root port (NUMA {numa})", numa_node=numa))
        devices.append(Device(id=top, kind=K.PCIE_SWITCH, name="Broadcom PCIe Gen4 switch (0x1000:0xc010)",
                              numa_node=numa,
                              attributes={"source": "pci device 0xc010 with GPUs and NICs below it, each behind "
                                                    "its own further switch level, in " + topo_src}))
        links.append(L(hb, f"cpu{numa}", LK.PCIE, 1, PCIE4_X16, 0.0, "root port inside the CPU package; Gen4 x16 "
                       "(" + PCIE_SRC4 + "); no extra latency", "PCIe Gen4 x16"))
        links.append(L(top, hb, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; link_speed 16 GT/s width 16 in "
                       + topo_src + ". " + LAT_PCIE_SRC, "PCIe Gen4 x16"))
        for j in range(2):
            g = 2 * k + j
            gsw = f"pcie_sw{k}_gpu{g}"
            devices.append(Device(id=f"gpu{g}", kind=K.GPU, name="NVIDIA A100-SXM4-40GB", index=g, vendor="nvidia",
                                  memory_bytes=40 * GiB, numa_node=numa, ordinals={"nvidia": g}, nvml_index=g,
                                  attributes={"form_factor": "SXM4",
                                              "source": "A100 SXM4 40 GB (PCI device 0x20b0 in " + topo_src +
                                                        "; DGX A100 640GB uses the 80 GB part); NUMA " + str(numa) +
                                                        " from the same topology and the public binding "
                                                        "CPUS=(3 3 1 1 7 7 5 5)"}))
            devices.append(Device(id=gsw, kind=K.PCIE_SWITCH, name="PCIe Gen4 switch port level (GPU side)",
                                  numa_node=numa))
            nic = nics[j]
            nsw = f"pcie_sw{k}_{nic}"
            devices.append(Device(id=nsw, kind=K.PCIE_SWITCH, name="PCIe Gen4 switch port level (NIC side)",
                                  numa_node=numa))
            devices.append(Device(id=nic, kind=K.NIC, name="ConnectX-6 HDR (compute)", vendor="mellanox",
                                  device_name=nic, numa_node=numa, line_rate_gbit_per_s=200.0,
                                  attributes={"role": "compute",
                                              "source": "net name " + nic + " speed 200000 under switch complex "
                                                        + str(k) + " in " + topo_src + "; DGX A100 datasheet: 8 x "
                                                        "single-port ConnectX-6 HDR 200 Gb/s"}))
            links += [
                L(gsw, top, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + ". " + LAT_PCIE_SRC, "PCIe Gen4 x16"),
                L(f"gpu{g}", gsw, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; A100 SXM4 Gen4 x16 (" + topo_src
                  + "). " + LAT_PCIE_SRC, "PCIe Gen4 x16"),
                L(nsw, top, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + ". " + LAT_PCIE_SRC, "PCIe Gen4 x16"),
                L(nic, nsw, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; ConnectX-6 Gen4 x16 (" + topo_src +
                  "). " + LAT_PCIE_SRC, "PCIe Gen4 x16"),
                L(f"gpu{g}", "nvswitch", LK.NVLINK, 12, 25.0, LAT_NVS, nv_src, "NVLink3"),
            ]
    for numa, names, src in ((0, ("mlx5_4", "mlx5_5"), "net mlx5_4 (port 1) and mlx5_5 (port 2) of one card "
                              "directly under NUMA 0 in " + topo_src),
                             (4, ("mlx5_10", "mlx5_11"), "by symmetry with mlx5_4/5; NUMA node 4 assumed [L]")):
        hb, card = f"hb_stor{numa}", f"stor_card{numa}"
        devices.append(Device(id=hb, kind=K.HOST_BRIDGE, name=f"PCIe root port (NUMA {numa})", numa_node=numa))
        devices.append(Device(id=card, kind=K.PCIE_SWITCH, name="dual-port ConnectX-6 card (2 PCIe functions)",
                              numa_node=numa, attributes={"source": "models the two ports of one card (PIX to each "
                                                                    "other)"}))
        links.append(L(hb, f"cpu{numa}", LK.PCIE, 1, PCIE4_X16, 0.0, "root port inside the CPU package; no extra "
                       "latency", "PCIe Gen4 x16"))
        links.append(L(card, hb, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + ". " + LAT_PCIE_SRC, "PCIe Gen4 x16"))
        for port, name in enumerate(names):
            devices.append(Device(id=name, kind=K.NIC, name="ConnectX-6 dual-port (storage/in-band)",
                                  vendor="mellanox", device_name=name, numa_node=numa, line_rate_gbit_per_s=200.0,
                                  attributes={"role": "storage", "port": port + 1,
                                              "source": src + "; DGX A100 datasheet: 2 x dual-port ConnectX-6 up "
                                                        "to 200 Gb/s (the nccl#1505 machine runs port 2 at "
                                                        "100 Gb/s)"}))
            links.append(L(name, card, LK.PCIE, 1, PCIE4_X16, 0.0, "port of the card (shares the card's Gen4 x16)",
                           "PCIe Gen4 x16"))
    return Topology(
        name="dgx-a100", devices=tuple(devices), links=tuple(links), source="preset:dgx-a100",
        description="NVIDIA DGX A100: 8 x A100 SXM4 NV12 through 6 NVSwitch chips, 2 x EPYC 7742 in NPS4 (8 NUMA "
                    "nodes; GPU0/1 NUMA3, GPU2/3 NUMA1, GPU4/5 NUMA7, GPU6/7 NUMA5), 4 PCIe Gen4 switches each with "
                    "2 GPUs and 2 HDR 200 Gb/s NICs (both PXB to both GPUs: a tie only a rule can break), 2 "
                    "dual-port storage NICs.",
        sources=(
            "NVIDIA/nccl#1505 NCCL topology XML of a DGX A100 (PCI tree, NUMA affinity, NVLink counts, mlx5 names) "
            "https://github.com/NVIDIA/nccl/issues/1505",
            "NVIDIA DGX A100 datasheet and user guide (6 NVSwitch, 2 x EPYC 7742, 8 x ConnectX-6 HDR + 2 dual-port)",
            "NVIDIA A100 datasheet (NVLink 600 GB/s bidirectional, 12 links)",
            "AMD EPYC 7742 product page (64 cores, 8 x DDR4-3200, 204.8 GB/s per socket)",
            "public DGX A100 binding script: CPUS=(3 3 1 1 7 7 5 5) NICS=(mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_6 mlx5_7 "
            "mlx5_8 mlx5_9)",
            "NVIDIA/nccl src/graph/topo.h (AMD_BW 16.0)",
            "openucx/ucx#8401 (two NICs tied for one GPU)",
        ),
        notes=(
            "[H] GPUs, NV12, NVSwitch count, NUMA mapping, compute NIC placement",
            "[M] PCIe switch levels below the 0xc010 switch (chosen to reproduce PXB); 40 GB GPUs",
            "[L] socket link count/speed, intra-socket fabric capacity, NUMA node of mlx5_10/11",
            "nearest_nics returns both NICs of a switch for each of its GPUs; the conventional choice is GPU 2k -> "
            "first NIC, GPU 2k+1 -> second NIC (attribute 'preferred_gpu' is not modelled)",
        ),
    )


# --------------------------------------------------------------------------------------------- hgx-a100-8-4nic
def hgx_a100_8_4nic():
    thread = "NVIDIA/nccl-tests#119 (3 servers x 8 A100-SXM4-40GB, 2 x Xeon 8358, 4 x Mellanox HDR 200 Gb/s each)"
    nv_src = ("NV12: 12 NVLink3 per GPU, 2 to each of the 6 NVSwitch chips of the HGX A100 8-GPU baseboard; 25 GB/s "
              "per link per direction nominal (600 GB/s bidirectional per GPU, NVIDIA A100 datasheet). " + LAT_NVS_SRC)
    devices = [Device(id="nvswitch", kind=K.NVSWITCH, name="NVSwitch plane (6 x second-gen NVSwitch)",
                      attributes={"physical_switches": 6,
                                  "source": "NVIDIA HGX A100 8-GPU baseboard: 6 NVSwitch (NVIDIA A100 datasheet / "
                                            "HGX A100 product brief)"})]
    links = [L("cpu0", "cpu1", LK.UPI, 3, 22.4, LAT_UPI,
               "Xeon Platinum 8358: 3 UPI links at 11.2 GT/s (Intel ARK); 11.2 GT/s x 2 B = 22.4 GB/s per link per "
               "direction (UPI carries 2 B per transfer per direction, Wikipedia 'Intel Ultra Path Interconnect'); "
               "all 3 links wired is an assumption [L]. " + LAT_UPI_SRC, "UPI 11.2 GT/s")]
    for s in range(2):
        devices.append(Device(
            id=f"cpu{s}", kind=K.CPU, name="Intel Xeon Platinum 8358", numa_node=s, socket=s,
            cores=cores((32 * s, 32 * s + 31), (64 + 32 * s, 64 + 32 * s + 31)), memory_bw_gb_per_s=204.8,
            attributes={"physical_cores": 32,
                        "source": "Xeon Platinum 8358 (" + thread + "): 32 cores, 8 channels DDR4-3200 x 25.6 GB/s = "
                                  "204.8 GB/s (Intel ARK); logical ids socket-major with SMT siblings +64 [L]"}))
    for k in range(4):
        s = k // 2
        hb, sw = f"hb{k}", f"pcie_sw{k}"
        nic = f"mlx5_{k}"
        devices += [
            Device(id=hb, kind=K.HOST_BRIDGE, name=f"PCIe root port (socket {s})", numa_node=s),
            Device(id=sw, kind=K.PCIE_SWITCH, name="PCIe Gen4 switch (2 GPUs + 1 NIC)", numa_node=s,
                   attributes={"source": "HGX A100 servers carry 4 PCIe Gen4 switches, 2 GPUs each (as dgx-a100, "
                                         "NVIDIA/nccl#1505); with 4 NICs, one NIC on each switch [M]"}),
            Device(id=nic, kind=K.NIC, name="ConnectX-6 HDR", vendor="mellanox", device_name=nic, numa_node=s,
                   line_rate_gbit_per_s=200.0,
                   attributes={"role": "compute",
                               "source": "4 x Mellanox HDR 200 Gb/s InfiniBand per server (" + thread + "); "
                                         "names mlx5_0..3 and one per PCIe switch [L]"}),
        ]
        links += [
            L(hb, f"cpu{s}", LK.PCIE, 1, PCIE4_X16, 0.0, "root port inside the CPU package; Gen4 x16 (" + PCIE_SRC4
              + "); no extra latency", "PCIe Gen4 x16"),
            L(sw, hb, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + ". " + LAT_PCIE_SRC, "PCIe Gen4 x16"),
            L(nic, sw, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; ConnectX-6 HDR is Gen4 x16 (NVIDIA ConnectX-6 "
              "VPI datasheet). " + LAT_PCIE_SRC, "PCIe Gen4 x16"),
        ]
        for j in range(2):
            g = 2 * k + j
            devices.append(Device(id=f"gpu{g}", kind=K.GPU, name="NVIDIA A100-SXM4-40GB", index=g, vendor="nvidia",
                                  memory_bytes=40 * GiB, numa_node=s, ordinals={"nvidia": g}, nvml_index=g,
                                  attributes={"form_factor": "SXM4",
                                              "source": "A100-SXM4-40GB (" + thread + "); GPUs 0-3 on socket 0, "
                                                        "4-7 on socket 1 [L]"}))
            links += [
                L(f"gpu{g}", sw, LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; A100 SXM4 is Gen4 x16. " + LAT_PCIE_SRC,
                  "PCIe Gen4 x16"),
                L(f"gpu{g}", "nvswitch", LK.NVLINK, 12, 25.0, LAT_NVS, nv_src, "NVLink3"),
            ]
    return Topology(
        name="hgx-a100-8-4nic", devices=tuple(devices), links=tuple(links), source="preset:hgx-a100-8-4nic",
        description="HGX A100 8-GPU server with 4 HDR NICs (one per 2 GPUs): 8 x A100 SXM4 40 GB NV12 through 6 "
                    "NVSwitch chips, 2 x Xeon Platinum 8358, 4 PCIe Gen4 switches each with 2 GPUs and 1 ConnectX-6 "
                    "HDR 200 Gb/s NIC (PIX), GPUs 0-3 and NICs mlx5_0/1 on socket 0.",
        sources=(
            "NVIDIA/nccl-tests#119 https://github.com/NVIDIA/nccl-tests/issues/119 (the machine: 8 x A100-SXM4-40GB, "
            "2 x Xeon 8358, 4 x HDR 200 Gb/s per server; NVIDIA's reply: 24 GB/s per NIC, 96 GB/s busbw target)",
            "NVIDIA A100 datasheet (NVLink 600 GB/s bidirectional, 12 links; HGX A100 8-GPU: 6 NVSwitch)",
            "Intel ARK Xeon Platinum 8358 (32 cores, 8 x DDR4-3200, 3 UPI at 11.2 GT/s)",
            "NVIDIA ConnectX-6 VPI datasheet (HDR 200 Gb/s, PCIe Gen4 x16)",
            "NVIDIA/nccl#1505 (DGX A100 PCIe tree: 4 Gen4 switches, 2 GPUs each)",
        ),
        notes=(
            "[H] 8 x A100 SXM4 40 GB, NV12 through 6 NVSwitch, 2 x Xeon 8358, 4 x HDR 200 Gb/s per node",
            "[M] 4 PCIe Gen4 switches with 2 GPUs and 1 NIC each (the 2:1 GPU:NIC layout of 4-NIC HGX A100 servers)",
            "[L] NIC names, PCIe levels (one switch level: GPU-NIC PIX), GPU-to-socket split, UPI link count, "
            "core numbering",
        ),
    )


# --------------------------------------------------------------------------------------------- mi250x-8gcd
def mi250x():
    fr = "OLCF Frontier User Guide (node diagram and NUMA note)"
    lumi = "LUMI user guide docs/hardware/lumig.md (node overview SVG)"
    gcd_numa = {0: 3, 1: 3, 2: 1, 3: 1, 4: 0, 5: 0, 6: 2, 7: 2}
    gcd_cores = {4: ((0, 7), (64, 71)), 5: ((8, 15), (72, 79)), 2: ((16, 23), (80, 87)), 3: ((24, 31), (88, 95)),
                 6: ((32, 39), (96, 103)), 7: ((40, 47), (104, 111)), 0: ((48, 55), (112, 119)),
                 1: ((56, 63), (120, 127))}
    devices = []
    links = []
    for n in range(4):
        devices.append(Device(
            id=f"cpu{n}", kind=K.CPU, name=f"AMD EPYC 7A53 'Trento' (NPS4 NUMA {n})", numa_node=n, socket=0,
            cores=cores((16 * n, 16 * n + 15), (64 + 16 * n, 64 + 16 * n + 15)), memory_bytes=128 * GiB,
            memory_bw_gb_per_s=51.2,
            attributes={"physical_cores": 16,
                        "source": "1 x 64-core EPYC 7A53 in NPS4, SMT siblings +64 (" + fr + "); 128 GiB DDR4 per "
                                  "NUMA node (" + lumi + "); 2 of 8 DDR4-3200 channels per quadrant = 51.2 GB/s "
                                  "(EPYC 7003 memory: 8 x DDR4-3200 = 204.8 GB/s) [M]"}))
    for a in range(4):
        for b in range(a + 1, 4):
            links.append(L(f"cpu{a}", f"cpu{b}", LK.UPI, 1, 51.2, 0.1,
                           "intra-socket Infinity Fabric on the IO die between NPS4 quadrants; capacity assumed = one "
                           "quadrant's 2 DDR4-3200 channels (51.2 GB/s) [L]; latency 0.1 us typical",
                           "Infinity Fabric (IO die)", P.USER))
    for g in range(8):
        lo = gcd_cores[g]
        devices.append(Device(
            id=f"gcd{g}", kind=K.GPU, name="AMD Instinct MI250X (GCD)", index=g, vendor="amd",
            memory_bytes=64 * GiB, numa_node=gcd_numa[g], ordinals={"amd": g}, package=g // 2,
            attributes={"gfx": "gfx90a", "closest_cores": f"{lo[0][0]}-{lo[0][1]},{lo[1][0]}-{lo[1][1]}",
                        "source": "8 GCDs of 4 MI250X, 64 GB HBM2E each, GCD g on package g//2; NUMA node and "
                                  "closest L3 cores from " + fr}))
        links.append(L(f"gcd{g}", f"cpu{gcd_numa[g]}", LK.XGMI, 1, 36.0, 0.5,
                       "CPU-GCD Infinity Fabric, peak 36+36 GB/s H2D/D2H (" + fr + "); latency 0.5 us typical",
                       "Infinity Fabric CPU-GPU"))
    xgmi = [((0, 1), 4), ((2, 3), 4), ((4, 5), 4), ((6, 7), 4), ((0, 6), 2), ((2, 4), 2), ((0, 2), 1), ((1, 3), 1),
            ((4, 6), 1), ((5, 7), 1), ((1, 5), 1), ((3, 7), 1)]
    for (a, b), n in xgmi:
        what = "in-package, 200 GB/s per direction" if n == 4 else f"{n} link(s) between packages"
        links.append(L(f"gcd{a}", f"gcd{b}", LK.XGMI, n, 50.0, 0.5,
                       f"{what}; links traced in the Frontier node diagram and the LUMI node SVG (they agree); 50 GB/s "
                       "per link per direction: 25 GT/s x 16 lanes (ROCm MI250 microarchitecture doc, LUMI: single/"
                       "double link 100/200 GB/s bidirectional); latency 0.5 us typical", "xGMI (Infinity Fabric 3)"))
    for k in range(4):
        g = 2 * k + 1
        devices.append(Device(
            id=f"hsn{k}", kind=K.NIC, name="HPE Slingshot-11 (Cassini)", vendor="hpe", device_name=f"hsn{k}",
            numa_node=gcd_numa[g], line_rate_gbit_per_s=200.0,
            attributes={"attached_gcd": g,
                        "source": "4 x Slingshot 200 Gb/s (25 GB/s) NICs (" + fr + "); one per MI250X, attached "
                                  f"by PCIe to GCD {g} (Frontier diagram hsn{k}, LUMI NIC{k})"}))
        links.append(L(f"hsn{k}", f"gcd{g}", LK.PCIE, 1, 50.0, LAT_PCIE,
                       "PCIe Gen4 ESM x16 (25 GT/s) = 50+50 GB/s between the NIC and the odd GCD (Frontier node "
                       "diagram) [M]. " + LAT_PCIE_SRC, "PCIe Gen4 ESM x16"))
    return Topology(
        name="mi250x-8gcd", devices=tuple(devices), links=tuple(links), source="preset:mi250x-8gcd",
        description="HPE Cray EX235a node (Frontier, LUMI-G): 1 x EPYC 7A53 'Trento' in NPS4 + 4 x MI250X = 8 GCDs; "
                    "in-package GCD pairs XGMI4 (200 GB/s), (0,6),(2,4) XGMI2, six more single links, the rest "
                    "routed over other GCDs; each GCD has a 36 GB/s Infinity Fabric link to its NUMA node; 4 "
                    "Slingshot-11 NICs hsn0..3 on GCD 1,3,5,7.",
        sources=(
            "OLCF Frontier User Guide https://docs.olcf.ornl.gov/systems/frontier_user_guide.html "
            "(olcf/olcf-user-docs systems/frontier_user_guide.rst, images/Frontier_Node_Diagram.jpg)",
            "LUMI user guide https://docs.lumi-supercomputer.eu/hardware/lumig/ (Lumi-supercomputer/lumi-userguide "
            "docs/hardware/lumig.md, docs/assets/images/lumig-node-overview.svg)",
            "ROCm documentation, AMD Instinct MI250 microarchitecture (25 GT/s, 50 GB/s per 16-wide link)",
            "AMD EPYC 7003 series memory (8 x DDR4-3200)",
        ),
        notes=(
            "[H] xGMI graph and link counts, CPU-GCD 36 GB/s, NUMA/core mapping, NIC attachment",
            "[M] NIC PCIe ESM rate, per-NUMA memory bandwidth",
            "[L] capacity of the IO-die links between NUMA nodes",
            "by default Frontier reserves the first core of each L3 region (-S 8)",
            "a different 8-GCD gfx90a server (RCCL topo_8p_90a.xml) has another xGMI graph: not this preset",
        ),
    )


# --------------------------------------------------------------------------------------------- k80-16
K80_SPEC = ("NVIDIA Tesla K80 board specification BD-07317-001 (Overview and Table 1: PCIe Gen3 x16 board, two GK210 "
            "behind an on-board PCIe switch, 24 GB GDDR5)")
PEX8747 = ("PLX/Broadcom PEX 8747 product brief (48-lane, 5-port PCIe Gen3 switch: cut-through, about 100 ns port-to-port "
           "latency), https://docs.broadcom.com/doc/12351854")
NCCL_TOPO = "NVIDIA NCCL src/graph/topo.h (PCI_BW 12.0 for Gen3 x16, QPI_BW 6.0), https://github.com/NVIDIA/nccl/blob/master/src/graph/topo.h"
CIRRASCALE = ("Cirrascale, 'Exploring the PCIe Bus Routes' (Xeon E5-2600 8-GPU servers: GPUs on one switch get full x16 "
              "P2P with minimal latency; non-adjacent GPUs on one CPU cross two switches and the root complex: extra "
              "latency, lower P2P rate; GPUs on different CPUs cannot peer across QPI), "
              "http://www.cirrascale.com/blog/index.php/exploring-the-pcie-bus-routes/")
CAFFE = ("BVLC/caffe#3319 (P2P across QPI/IOH unsupported, or 100s of MB/s where the chipset allows it), "
         "https://github.com/BVLC/caffe/pull/3319")
ROOT_P2P = ("peer DMA through one Xeon root complex measured: 7.1 GB/s SSD-to-GPU where the same three SSDs reach "
            "9.4-9.5 GB/s into host memory (Xeon E5-2650 v4, Broadwell-EP, one socket; NVIDIA developer forum "
            "t/55564 'P2P DMA performance limitation? where a single CPU is invoked'): 7.1 / 9.45 = 0.75, the factor "
            "used here (fitted to that one figure; no Haswell-EP GPU-to-GPU figure was found); the same ratio in a "
            "2016 8-GPU box of two 80-lane PLX switches on one CPU (Maxwell Titan X, PCIe Gen3): NCCL all_reduce on 2 "
            "GPUs 11.28 GB/s under one switch, 8.23 GB/s across the switches through the CPU, 0.73 (NVIDIA/nccl#44); "
            "NVIDIA's GPUDirect "
            "RDMA guide, 'Supported systems': through a single CPU/IOH P2P works but performs worse, and peer read "
            "bandwidth is severely limited on some processor architectures (docs.nvidia.com/cuda/gpudirect-rdma); "
            "NCCL's maintainer: 'recent Intel CPUs have horrible P2P performance', so NCCL does not use P2P through "
            "the CPU by default (NVIDIA/nccl#428)")
MPI_STAGING = ("MPI libraries stage device buffers between ranks without CUDA IPC (across sockets here) through host "
               "shared memory in fragments: Open MPI 4.1.4 smcuda, btl_cuda_max_send_size 128 KiB "
               "(opal/mca/btl/smcuda/btl_smcuda_component.c lines 203-205); measured with the same library on "
               "2 x H200 with CUDA IPC off: 4.5 GB/s for osu_bw D D at 1-16 MiB (docs/benchmarks.md, issue 15). The "
               "twin's ce-nopeer is the driver's staging (cudaMemcpyPeer), not an MPI library's; MPI's is not modelled")
LAT_K80_LINK = 0.05
LAT_K80_LINK_SRC = ("0.05 us per PCIe Gen3 link traversal (PHY + data-link layer, tens of ns) [L]; the switches' own "
                    "latency is a per-device transit term (transit_latency_us)")


def k80_16():
    devices = []
    links = []
    e5 = "Intel Xeon E5-2600 v3 class (Haswell-EP), 12 cores assumed [L]"
    for s in range(2):
        devices.append(Device(
            id=f"cpu{s}", kind=K.CPU, name="Intel Xeon E5-2600 v3 (Haswell-EP, model unknown)", numa_node=s,
            socket=s, cores=cores((12 * s, 12 * s + 11), (24 + 12 * s, 24 + 12 * s + 11)), memory_bw_gb_per_s=68.3,
            attributes={"physical_cores": 12,
                        "source": e5 + "; 4 channels DDR4-2133 = 68.3 GB/s per socket (Intel ARK E5-2600 v3)"}))
        devices.append(Device(
            id=f"hb{s}", kind=K.HOST_BRIDGE, name=f"PCIe root complex (socket {s})", numa_node=s,
            attributes={"p2p_transit_efficiency": 0.75, "transit_latency_us": 0.25,
                        "source": "peer traffic between two root ports of a Haswell-EP root complex: P2P is "
                                  "supported within the socket but forwarded slower and later than inside a switch ("
                                  + CIRRASCALE + "); factor 0.75 [M]: " + ROOT_P2P + "; 0.25 us is an estimate [L]; "
                                  "P2P stops here: peer_access.max_level = PHB"}))
        links.append(L(f"hb{s}", f"cpu{s}", LK.PCIE, 1, 39.4, 0.0,
                       "root complex inside the CPU: 40 PCIe Gen3 lanes x 0.985 GB/s = 39.4 GB/s (Intel ARK "
                       "E5-2600 v3); no extra latency", "PCIe Gen3 (40 lanes)"))
        for p in range(2):
            plx = f"plx{2 * s + p}"
            devices.append(Device(
                id=plx, kind=K.PCIE_SWITCH, name="PLX PCIe Gen3 switch (chassis, host side)", numa_node=s,
                attributes={"p2p_transit_efficiency": 0.95, "transit_latency_us": 0.15,
                            "source": "chassis PLX switch of an 8 x K80 server (Cray CS-Storm, HP SL270 class: two "
                                      "K80 boards per switch, two switches per socket [L]); a PXB path crosses it "
                                      "and both boards' switches: cut-through, about 0.1-0.15 us per switch ("
                                      + PEX8747 + "); bandwidth factor 0.95 per chassis switch is an estimate [L]; "
                                      "P2P under one PLX switch in a 2016 Gen3 box ran at 11.28 GB/s (NCCL all_reduce, "
                                      "2 GPUs, NVIDIA/nccl#44), 0.72 of the 15.75 GB/s link, near NCCL's 12 GB/s"}))
            links.append(L(plx, f"hb{s}", LK.PCIE, 1, PCIE3_X16, LAT_K80_LINK, PCIE_SRC3 + " (x16 uplink). "
                           + LAT_K80_LINK_SRC, "PCIe Gen3 x16"))
            for q in range(2):
                b = 4 * s + 2 * p + q
                bsw = f"k80sw{b}"
                devices.append(Device(
                    id=bsw, kind=K.PCIE_SWITCH, name="PLX PEX8747 (on K80 board)", numa_node=s,
                    attributes={"board": b, "p2p_transit_efficiency": 0.97, "transit_latency_us": 0.1,
                                "source": K80_SPEC + "; switch: " + PEX8747 + "; NCCL rates a Gen3 x16 P2P path "
                                          "through one switch at 12 GB/s (" + NCCL_TOPO + "), the pcie3 link "
                                          "efficiency; 0.97 per switch traversal as for any PCIe switch [L]"}))
                links.append(L(bsw, plx, LK.PCIE, 1, PCIE3_X16, LAT_K80_LINK, PCIE_SRC3 + " (K80 board edge x16). "
                               + LAT_K80_LINK_SRC, "PCIe Gen3 x16"))
                for h in range(2):
                    g = 2 * b + h
                    devices.append(Device(
                        id=f"gpu{g}", kind=K.GPU, name="Tesla K80 (GK210)", index=g, vendor="nvidia",
                        memory_bytes=12 * GiB, numa_node=s, ordinals={"nvidia": g}, nvml_index=g, package=b,
                        attributes={"source": K80_SPEC + ": 24 GB per board = 12 GB per GPU; PCI bus order "
                                              "assumed = board order"}))
                    links.append(L(f"gpu{g}", bsw, LK.PCIE, 1, PCIE3_X16, LAT_K80_LINK, PCIE_SRC3 + "; GK210 x16 "
                                   "to the on-board switch (" + K80_SPEC + "). " + LAT_K80_LINK_SRC, "PCIe Gen3 x16"))
    links.append(L("cpu0", "cpu1", LK.UPI, 2, 19.2, LAT_UPI,
                   "2 QPI links at 9.6 GT/s (Intel ARK Xeon E5-2600 v3) x 2 B = 19.2 GB/s per link per direction: the "
                   "physical figure. GPU peer copies never cross it (P2P stops at the socket: " + CAFFE + "; "
                   + CIRRASCALE + "); host-staged copies do, at the qpi/upi link efficiency. NCCL's 6 GB/s "
                   "(QPI_BW, " + NCCL_TOPO + ") is an effective P2P figure and is not used as the capacity. "
                   + LAT_UPI_SRC, "QPI 9.6 GT/s"))
    devices.append(Device(id="mlx5_0", kind=K.NIC, name="InfiniBand HCA (FDR, typical)", vendor="mellanox",
                          device_name="mlx5_0", numa_node=0, line_rate_gbit_per_s=56.0,
                          attributes={"source": "one FDR/EDR HCA on socket 0 is typical of 8 x K80 nodes "
                                                "(lattice/quda#669 8-GPU analogue, "
                                                "https://github.com/lattice/quda/issues/669); FDR 56 Gb/s assumed [L]"}))
    links.append(L("mlx5_0", "hb0", LK.PCIE, 1, 7.88, LAT_K80_LINK,
                   "PCIe Gen3 x8 (typical for an FDR HCA): 8 GT/s x 8 x 128/130 / 8 = 7.88 GB/s. " + LAT_K80_LINK_SRC,
                   "PCIe Gen3 x8"))
    return Topology(
        name="k80-16", devices=tuple(devices), links=tuple(links), source="preset:k80-16",
        description="16-GPU Tesla K80 node (8 boards x 2 GK210), 2 sockets: each board has an on-board PEX8747 "
                    "switch, two boards per chassis PLX switch, two PLX switches per socket under the root complex, "
                    "sockets joined by QPI. Four levels, each slower: same board PIX (one switch), across boards "
                    "under one PLX PXB (three switches), across PLX switches PHB (through the root complex), across "
                    "QPI SYS (no P2P: host-staged) - the platform of Faraji et al.",
        sources=(
            K80_SPEC,
            PEX8747,
            CIRRASCALE,
            CAFFE,
            NCCL_TOPO,
            "NVML nvmlGpuTopologyLevel_t NVML_TOPOLOGY_INTERNAL ('e.g. Tesla K80'); nvidia-smi topo -n level 0",
            "Faraji, Mirsadeghi, Afsahi: Exploiting heterogeneity of communication channels for efficient GPU "
            "selection on multi-GPU nodes, Parallel Computing 2017 (16-GPU node, 4 levels)",
            "Intel ARK Xeon E5-2600 v3 (40 PCIe Gen3 lanes, 2 QPI at 9.6 GT/s, 4 x DDR4-2133)",
            "NVIDIA developer forum t/55564 (P2P DMA through one Broadwell-EP root complex: 7.1 vs 9.4-9.5 GB/s)",
            "NVIDIA GPUDirect RDMA guide, Supported systems (PCIe switches only / single CPU/IOH / across QPI)",
            "NVIDIA/nccl#428 (P2P through Intel CPUs: NCCL does not use it by default)",
            "Open MPI 4.1.4 opal/mca/btl/smcuda/btl_smcuda_component.c (128 KiB CUDA fragments without CUDA IPC)",
        ),
        peer_access=PeerAccess(max_level="PHB", source="GPUDirect P2P stops at the socket: no peer access across "
                                                       "QPI (" + CAFFE + "; " + CIRRASCALE + ")"),
        model_params={
            "overhead_us.ce-nopeer@SYS": {
                "value": 2.0, "provenance": "default",
                "source": "host-staged copy across sockets: the driver's staging protocol adds a host-memory "
                          "round trip across QPI on top of the same-socket staging cost (estimate [L])"},
        },
        notes=(
            "[M] the four levels and the on-board K80 switch",
            "[L] switch fan-out (vendor-specific), CPU model and cores, HCA type, GPU ordering, per-switch transit "
            "factors and the transit latencies (no public P2P matrix of a K80 node was found in the stored sources)",
            "[M] root-complex transit factor 0.75: fitted to one public Broadwell-EP figure (see hb0's source)",
            "pageable host copies use the model's default host copy rates, measured on a 2026 H200 host: a Haswell "
            "host's one-thread copy rate is not cited",
            MPI_STAGING,
            "levels come from per-element facts: one switch (PIX), three switches (PXB), three switches and the "
            "root complex twice over PLX (PHB); the pcie3 efficiency (NCCL's 12 of 15.75 GB/s) is the base",
            "the QPI link is the physical 2 x 19.2 GB/s; peer copies across it are refused (peer_access.max_level PHB)",
        ),
    )


P2P_SOCKET = ("GPUDirect P2P stops at the socket on Intel Xeon platforms: peer access between GPUs under different "
              "sockets is reported as not supported ('CNS', chipset not supported, in nvidia-smi topo -p2p r; "
              "cudaDeviceCanAccessPeer returns 0), so copies across UPI/QPI are staged through host memory "
              "(BVLC/caffe#3319, https://github.com/BVLC/caffe/pull/3319; Cirrascale 'Exploring the PCIe Bus "
              "Routes', http://www.cirrascale.com/blog/index.php/exploring-the-pcie-bus-routes/)")


# --------------------------------------------------------------------------------------------- pcie-8gpu-2socket
def pcie_8gpu():
    devices = []
    links = []
    for s in range(2):
        devices.append(Device(
            id=f"cpu{s}", kind=K.CPU, name="Intel Xeon (Ice Lake-SP class, 32 cores assumed)", numa_node=s, socket=s,
            cores=cores((32 * s, 32 * s + 31), (64 + 32 * s, 64 + 32 * s + 31)), memory_bw_gb_per_s=204.8,
            attributes={"physical_cores": 32,
                        "source": "generic 2-socket server of the A100-PCIe era [L]; 8 channels DDR4-3200 = 204.8 "
                                  "GB/s per socket (Intel ARK, 3rd gen Xeon Scalable)"}))
        devices.append(Device(id=f"sw{s}", kind=K.PCIE_SWITCH, name="PCIe Gen4 switch (Microchip Switchtec class)",
                              numa_node=s,
                              attributes={"source": "NVIDIA/nccl#1405 lspci: root port -> PMC-Sierra/Microchip "
                                                    "Switchtec switch -> ConnectX-6 Dx + 4 x A100 PCIe, same on the "
                                                    "other socket; NVIDIA/nccl#1086 ('a PCI switch connecting groups "
                                                    "of 4 GPUs')"}))
        links.append(L(f"sw{s}", f"cpu{s}", LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + " (switch uplink, shared "
                       "4:1 by the GPUs for host, NIC and cross-socket traffic). " + LAT_PCIE_SRC, "PCIe Gen4 x16"))
        nic = f"mlx5_{s}"
        devices.append(Device(id=nic, kind=K.NIC, name="ConnectX-6 Dx", vendor="mellanox", device_name=nic,
                              numa_node=s, line_rate_gbit_per_s=200.0,
                              attributes={"source": "ConnectX-6 Dx on each switch (NVIDIA/nccl#1405); 200 Gb/s "
                                                    "(2 x 100 GbE or 1 x 200 GbE, ConnectX-6 Dx datasheet) [M]"}))
        links.append(L(nic, f"sw{s}", LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; ConnectX-6 Dx Gen4 x16. "
                       + LAT_PCIE_SRC, "PCIe Gen4 x16"))
        for j in range(4):
            g = 4 * s + j
            devices.append(Device(id=f"gpu{g}", kind=K.GPU, name="NVIDIA A100 80GB PCIe", index=g, vendor="nvidia",
                                  memory_bytes=80 * GiB, numa_node=s, ordinals={"nvidia": g}, nvml_index=g,
                                  attributes={"source": "4 x 'GA100 [A100 PCIe 80GB]' per switch (NVIDIA/nccl#1405); "
                                                        "L40S / L4 / RTX 4090 servers share this layout"}))
            links.append(L(f"gpu{g}", f"sw{s}", LK.PCIE, 1, PCIE4_X16, LAT_PCIE, PCIE_SRC4 + "; A100 PCIe is Gen4 x16. "
                           + LAT_PCIE_SRC, "PCIe Gen4 x16"))
    links.append(L("cpu0", "cpu1", LK.UPI, 3, 22.4, LAT_UPI,
                   "3 UPI links at 11.2 GT/s (3rd gen Xeon Scalable, Intel ARK) x 2 B = 22.4 GB/s per link per "
                   "direction (UPI carries 2 B per transfer per direction, Wikipedia 'Intel Ultra Path "
                   "Interconnect') [L: CPU generic]; NCCL models GPU traffic across SKL-class UPI at 10 GB/s "
                   "(SKL_QPI_BW in topo.h). " + LAT_UPI_SRC, "UPI 11.2 GT/s"))
    return Topology(
        name="pcie-8gpu-2socket", devices=tuple(devices), links=tuple(links), source="preset:pcie-8gpu-2socket",
        description="8-GPU PCIe server (A100-PCIe / L40S / L4 / RTX 4090 class): per socket one PCIe Gen4 x16 "
                    "switch (31.5 GB/s per direction, '32 GB/s') with 4 GPUs and 1 NIC, sockets joined by UPI. "
                    "GPU pairs under one switch are PIX; across sockets SYS. GeForce cards lack P2P, so their "
                    "same-switch traffic goes through the root complex (not modelled here).",
        sources=(
            "NVIDIA/nccl#1405 (lspci tree: Switchtec switch with ConnectX-6 Dx + 4 x A100 PCIe 80GB per socket)",
            "NVIDIA/nccl#1086, #1309, #1614 (switch with groups of 4 GPUs; GeForce without P2P halves bandwidth)",
            "PCI Express Base Specification 4.0 (16 GT/s, 128b/130b); hwloc reports Gen4 x16 as 31.51 GB/s",
            "Intel ARK 3rd gen Xeon Scalable (3 UPI at 11.2 GT/s, 8 x DDR4-3200)",
            "Wikipedia 'Intel Ultra Path Interconnect' (24 GT/s = 48 GB/s per direction per link)",
            "NVIDIA/nccl src/graph/topo.h (SKL_QPI_BW 10.0)",
        ),
        notes=(
            "[M] 4 GPUs + 1 NIC behind one Gen4 switch per socket",
            "[L] CPU model, cores, UPI figures; GPU model (A100 80GB PCIe chosen)",
            "contention: 4 GPUs share one 31.5 GB/s uplink for host, NIC and cross-socket traffic (4:1)",
        ),
        peer_access=PeerAccess(max_level="NODE", source=P2P_SOCKET),
    )


# --------------------------------------------------------------------------------------------- v100-4-nvlink-ib
def v100_4():
    devices = []
    links = []
    for s in range(2):
        devices.append(Device(
            id=f"cpu{s}", kind=K.CPU, name="Intel Xeon Skylake-SP, 18 cores (e.g. Gold 6140)", numa_node=s, socket=s,
            cores=cores((18 * s, 18 * s + 17), (36 + 18 * s, 36 + 18 * s + 17)), memory_bw_gb_per_s=128.0,
            attributes={"physical_cores": 18,
                        "source": "CALMIP 'OLYMPE schematise': GPU node = 2 sockets x 18 cores with HT, cores 0-17 "
                                  "socket 0, 18-35 socket 1, logical 36-71; 6 channels DDR4-2666 = 128 GB/s per "
                                  "socket (Intel ARK Gold 6140) [M]"}))
        sw, nic = f"sw{s}", f"mlx5_{s}"
        devices.append(Device(id=sw, kind=K.PCIE_SWITCH, name="PCIe Gen3 switch", numa_node=s,
                              attributes={"source": "two PCIe Gen3 switches, each with 2 GPUs + 1 EDR HCA: the layout of "
                                                    "a 4 x V100 + 2 EDR HCA node as linkscope issue 14 describes it "
                                                    "(GPU<->own HCA PIX, other HCA SYS) [L]"}))
        devices.append(Device(id=nic, kind=K.NIC, name="ConnectX-5 EDR InfiniBand", vendor="mellanox",
                              device_name=nic, numa_node=s, line_rate_gbit_per_s=100.0,
                              attributes={"source": f"EDR 100 Gb/s = 12.5 GB/s per direction; {nic} with GPU"
                                                    f"{2 * s}/{2 * s + 1} on socket {s}; binding rule "
                                                    "UCX_NET_DEVICES=mlx5_<socket>:1 (UCX FAQ: 'UCX_NET_DEVICES' selects the "
                                                    "device, openucx.readthedocs.io/en/master/faq.html) [M]"}))
        links.append(L(sw, f"cpu{s}", LK.PCIE, 1, PCIE3_X16, LAT_PCIE, PCIE_SRC3 + " (switch uplink). "
                       + LAT_PCIE_SRC, "PCIe Gen3 x16"))
        links.append(L(nic, sw, LK.PCIE, 1, PCIE3_X16, LAT_PCIE, PCIE_SRC3 + "; ConnectX-5 Gen3 x16. " + LAT_PCIE_SRC,
                       "PCIe Gen3 x16"))
        for j in range(2):
            g = 2 * s + j
            devices.append(Device(id=f"gpu{g}", kind=K.GPU, name="Tesla V100-SXM2-16GB", index=g, vendor="nvidia",
                                  memory_bytes=16 * GiB, numa_node=s, ordinals={"nvidia": g}, nvml_index=g,
                                  attributes={"form_factor": "SXM2",
                                              "source": "4 x V100 SXM2 per node (CALMIP Olympe); 16 GB variant "
                                                        "assumed [L]"}))
            links.append(L(f"gpu{g}", sw, LK.PCIE, 1, PCIE3_X16, LAT_PCIE, PCIE_SRC3 + "; V100 SXM2 Gen3 x16. "
                           + LAT_PCIE_SRC, "PCIe Gen3 x16"))
    nv_src = ("2 NVLink2 between the GPUs of a pair ('GPU pairs joined by 2 NVLinks', the node as linkscope "
              "issue 14 describes it) [L]; 25 GB/s per link per direction (hwloc NVLink table; nvidia-smi nvlink -s 25.781); "
              "latency 0.6 us typical for a direct NVLink hop")
    links.append(L("gpu0", "gpu1", LK.NVLINK, 2, 25.0, 0.6, nv_src, "NVLink2"))
    links.append(L("gpu2", "gpu3", LK.NVLINK, 2, 25.0, 0.6, nv_src, "NVLink2"))
    links.append(L("cpu0", "cpu1", LK.UPI, 3, 20.8, LAT_UPI,
                   "3 UPI links at 10.4 GT/s (Intel ARK Gold 6140) = 20.8 GB/s per link per direction (QPI/UPI "
                   "bandwidth table, xryan.net; Wikipedia 'Intel Ultra Path Interconnect'); NCCL models GPU traffic "
                   "across SKL UPI at 10 GB/s (SKL_QPI_BW). " + LAT_UPI_SRC, "UPI 10.4 GT/s"))
    return Topology(
        name="v100-4-nvlink-ib", devices=tuple(devices), links=tuple(links), source="preset:v100-4-nvlink-ib",
        description="4 x V100-SXM2 node with 2 EDR HCAs (CALMIP Olympe-like, BullSequana X1125 blade), as the issue "
                    "text describes it: pairs (0,1) and (2,3) joined by 2 NVLink2 (50 GB/s per direction), each "
                    "pair behind a PCIe Gen3 x16 switch with one EDR HCA (mlx5_0 socket 0, mlx5_1 socket 1), 2 "
                    "sockets x 18 cores + HT. A 4-GPU SXM2 board more likely wires NV2 all-to-all (every pair 2 "
                    "links); that variant is not this preset: verify with nvidia-smi topo -m.",
        sources=(
            "CALMIP 'OLYMPE schematise' (GPU node: 2 x 18 cores, HT, 4 GPUs; core numbering)",
            "hwloc NVLink bandwidth table (NVLink2 25 GB/s per direction per link); nvidia-smi nvlink -s (25.781)",
            "InfiniBand EDR 100 Gb/s (IBTA)",
            "Intel ARK Xeon Gold 6140 (18 cores, 3 UPI at 10.4 GT/s, 6 x DDR4-2666)",
            "QPI/UPI bandwidth table https://xryan.net/p/295 (UPI 10.4 GT/s = 20.8 GB/s unidirectional)",
            "NVIDIA/nccl src/graph/topo.h (SKL_QPI_BW)",
        ),
        notes=(
            "[M] CPU/GPU counts and core numbering",
            "[L] NVLink wiring (issue text reading; NV2 all-to-all is the likelier board wiring), PCIe switch "
            "layout, GPU memory size",
        ),
        peer_access=PeerAccess(max_level="NODE", source=P2P_SOCKET),
    )


if __name__ == "__main__":
    for build in (hgx_h200_4, dgx_h100, dgx_a100, hgx_a100_8_4nic, mi250x, k80_16, pcie_8gpu, v100_4):
        save(build())
