"""Hardware-free twins for discovery tests: a FakeNVML module double, a sysfs tree builder, and the
specs of the synthetic recorded machines (used to (re)generate tests/fixtures/machines/*)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
INVALID_ARGUMENT = pynvml.NVML_ERROR_INVALID_ARGUMENT


@dataclass
class FakeGpu:
    bus_id: str                      # NVML style: 00000000:03:00.0
    name: str = "NVIDIA A100 80GB PCIe"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    memory_bytes: int = 85899345920
    numa_node: int | None = 0
    cpus: tuple[int, ...] = ()
    pcie: tuple[int, int] | None = (4, 16)
    pcie_max: tuple[int, int] | None = None  # (generation, width) device and system allow; None = same as pcie
    gpu_max_gen: int | None = None           # the GPU's own maximum generation; None = not supported
    # per link: (remote bus id, remote type 0 GPU / 2 SWITCH, version, speed MB/s or None); None = no NVLink
    nvlinks: list[tuple[str, int, int, int | None]] | None = None
    inactive_links: int = 0
    bar1_bytes: int | None = 128 * 1024**3    # None: nvmlDeviceGetBAR1MemoryInfo not supported
    # error counters: (link, NVML_NVLINK_ERROR_DL_* index) -> count; links not named read 0
    nvlink_errors: dict[tuple[int, int], int] = field(default_factory=dict)
    nvlink_error_counter_supported: bool = True  # False: the per-link call says NOT_SUPPORTED (fields answer)
    # which NVLink error field values answer: "scoped" (161-163 with scopeId = link, as the recorded
    # H100 on driver 580 does), "legacy" (the _L0.._L11 and _TOTAL ids, older GPUs/drivers), "none"
    error_fields: str = "scoped"
    pcie_replay: int | None = 0               # None: not supported
    pcie_fields: dict[int, int] = field(default_factory=dict)  # PCIe error field id -> value (others NOT_SUPPORTED)


@dataclass
class FakeNVML:
    """Enough of pynvml for ``nvml.read_facts`` and ``nvml.probe``: same names, same error type."""

    gpus: list[FakeGpu]
    p2p: dict[tuple[int, int], dict[int, int]] = field(default_factory=dict)  # (i, j) -> {cap index: status}
    ancestor: dict[tuple[int, int], int] = field(default_factory=dict)
    init_error: int | None = None
    calls: list[str] = field(default_factory=list)

    NVMLError = pynvml.NVMLError

    def _err(self, code: int) -> Exception:
        return pynvml.NVMLError(code)

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise self._err(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.90.07"

    def nvmlSystemGetNVMLVersion(self) -> str:
        return "12.550.90.07"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12040

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return SimpleNamespace(busId=self.gpus[h].bus_id.encode(), pciDeviceId=0x20B510DE)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=self.gpus[h].memory_bytes)

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.gpus[h].name

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self.gpus[h].uuid

    def nvmlDeviceGetNumaNodeId(self, h: int) -> int:
        if self.gpus[h].numa_node is None:
            raise self._err(NOT_SUPPORTED)
        return self.gpus[h].numa_node

    def nvmlDeviceGetCpuAffinity(self, h: int, words: int) -> list[int]:
        mask = [0] * words
        for cpu in self.gpus[h].cpus:
            if cpu // 64 < words:  # like NVML: a short cpuSetSize truncates the mask
                mask[cpu // 64] |= 1 << (cpu % 64)
        return mask

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        if self.gpus[h].pcie is None:
            raise self._err(NOT_SUPPORTED)
        return self.gpus[h].pcie[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        if self.gpus[h].pcie is None:
            raise self._err(NOT_SUPPORTED)
        return self.gpus[h].pcie[1]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        g = self.gpus[h]
        if g.pcie is None:
            raise self._err(NOT_SUPPORTED)
        return (g.pcie_max or g.pcie)[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        g = self.gpus[h]
        if g.pcie is None:
            raise self._err(NOT_SUPPORTED)
        return (g.pcie_max or g.pcie)[1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: int) -> int:
        if self.gpus[h].gpu_max_gen is None:
            raise self._err(NOT_SUPPORTED)
        return self.gpus[h].gpu_max_gen

    def _links(self, h: int) -> list[tuple[str, int, int, int | None]]:
        links = self.gpus[h].nvlinks
        if links is None:
            raise self._err(NOT_SUPPORTED)
        return links

    def _link(self, h: int, link: int) -> tuple[str, int, int, int | None]:
        links = self._links(h)
        if link >= len(links) + self.gpus[h].inactive_links:
            raise self._err(INVALID_ARGUMENT)
        return links[link]

    def _error_field(self, h: int, field_id: int, scope: int = 0) -> int | None:
        """NVLink error field values as NVML gives them (unsigned long long): scoped per link
        (161 replay, 162 recovery, 163 CRC, scopeId = link) or legacy per link (L0-L11) and totals."""
        g = self.gpus[h]
        if g.error_fields == "scoped":
            counter = {pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: 0, pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY: 1,
                       pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_CRC: 2}.get(field_id)
            if counter is None or scope >= len(g.nvlinks or []):
                return None
            return g.nvlink_errors.get((scope, counter), 0)
        if g.error_fields != "legacy":
            return None
        for kind, counter in (("CRC_FLIT", 2), ("CRC_DATA", 3), ("REPLAY", 0), ("RECOVERY", 1)):
            per_link = [getattr(pynvml, f"NVML_FI_DEV_NVLINK_{kind}_ERROR_COUNT_L{k}") for k in range(12)]
            if field_id in per_link:
                link = per_link.index(field_id)
                return g.nvlink_errors.get((link, counter), 0) if link < len(g.nvlinks or []) else None
            if field_id == getattr(pynvml, f"NVML_FI_DEV_NVLINK_{kind}_ERROR_COUNT_TOTAL"):
                return sum(v for (link, c), v in g.nvlink_errors.items() if c == counter)
        return None

    def nvmlDeviceGetFieldValues(self, h: int, ids: list[Any]) -> list[Any]:
        out = []
        for item in ids:
            field_id, scope = item if isinstance(item, tuple) else (item, 0)
            ret, value, vtype = pynvml.NVML_ERROR_NOT_SUPPORTED, 0, pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
            g = self.gpus[h]
            links = g.nvlinks
            if links is not None:
                if field_id == pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT:
                    ret, value = 0, len(links) + g.inactive_links
                elif field_id == pynvml.NVML_FI_DEV_NVLINK_GET_SPEED and scope < len(links) and links[scope][3]:
                    ret, value = 0, links[scope][3]
                elif (errors := self._error_field(h, field_id, scope)) is not None:
                    ret, value, vtype = 0, errors, pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            if field_id == pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER and g.pcie_replay is not None:
                ret, value = 0, g.pcie_replay
            elif field_id in g.pcie_fields:
                ret, value = 0, g.pcie_fields[field_id]
            out.append(SimpleNamespace(fieldId=field_id, scopeId=scope, nvmlReturn=ret, valueType=vtype,
                                       value=SimpleNamespace(uiVal=value, ullVal=value)))
        return out

    def nvmlDeviceGetBAR1MemoryInfo(self, h: int) -> Any:
        total = self.gpus[h].bar1_bytes
        if total is None:
            raise self._err(NOT_SUPPORTED)
        return SimpleNamespace(bar1Total=total, bar1Free=total - 32 * 1024**2, bar1Used=32 * 1024**2)

    def nvmlDeviceGetNvLinkErrorCounter(self, h: int, link: int, counter: int) -> int:
        g = self.gpus[h]
        self._link(h, link)
        if not g.nvlink_error_counter_supported:
            raise self._err(NOT_SUPPORTED)
        return g.nvlink_errors.get((link, counter), 0)

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> int:
        if self.gpus[h].pcie_replay is None:
            raise self._err(NOT_SUPPORTED)
        return self.gpus[h].pcie_replay

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        links = self._links(h)
        if link >= len(links) + self.gpus[h].inactive_links:
            raise self._err(INVALID_ARGUMENT)
        return 1 if link < len(links) else 0

    def nvmlDeviceGetNvLinkVersion(self, h: int, link: int) -> int:
        return self._link(h, link)[2]

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: int, link: int) -> Any:
        return SimpleNamespace(busId=self._link(h, link)[0].encode())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: int, link: int) -> int:
        return self._link(h, link)[1]

    def nvmlDeviceGetP2PStatus(self, a: int, b: int, cap: int) -> int:
        key = (min(a, b), max(a, b))
        return self.p2p.get(key, {}).get(cap, 0)

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:
        return self.ancestor.get((min(a, b), max(a, b)), 50)


# ---- sysfs tree builder -----------------------------------------------------------------------------

class SysfsTree:
    """Writes a small, realistic /sys under ``root``: device folders under /sys/devices/pciDDDD:BB/...,
    relative symlinks from /sys/bus/pci/devices, /sys/class/{infiniband,net}, NUMA nodes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")

    def _link(self, rel: str, target: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)

    def device(self, chain: list[str], cls: str, vendor: str, device: str, numa: int,
               speed: str | None = "16.0 GT/s PCIe", width: int | None = 16, cpulist: str = "") -> str:
        """chain = [root bus, ..., this device's bdf]; returns the device folder (relative)."""
        folder = "sys/devices/" + "/".join(chain)
        bdf = chain[-1]
        self._write(f"{folder}/class", cls)
        self._write(f"{folder}/vendor", vendor)
        self._write(f"{folder}/device", device)
        self._write(f"{folder}/numa_node", str(numa))
        self._write(f"{folder}/local_cpulist", cpulist)
        if speed is not None:
            self._write(f"{folder}/current_link_speed", speed)
            self._write(f"{folder}/max_link_speed", speed)
        if width is not None:
            self._write(f"{folder}/current_link_width", str(width))
            self._write(f"{folder}/max_link_width", str(width))
        self._link(f"sys/bus/pci/devices/{bdf}", "../../../devices/" + "/".join(chain))
        return folder

    def infiniband(self, name: str, chain: list[str], rate: str) -> None:
        folder = "sys/devices/" + "/".join(chain) + f"/infiniband/{name}"
        self._link(f"{folder}/device", "../../../" + chain[-1])
        self._write(f"{folder}/ports/1/rate", rate)
        self._link(f"sys/class/infiniband/{name}", "../../devices/" + "/".join(chain) + f"/infiniband/{name}")

    def net(self, name: str, chain: list[str] | None, speed_mbps: int | None = None) -> None:
        if chain is None:
            folder = f"sys/devices/virtual/net/{name}"
            self._write(f"{folder}/speed", "-1")
            self._link(f"sys/class/net/{name}", f"../../devices/virtual/net/{name}")
            return
        folder = "sys/devices/" + "/".join(chain) + f"/net/{name}"
        self._link(f"{folder}/device", "../../../" + chain[-1])
        if speed_mbps is not None:
            self._write(f"{folder}/speed", str(speed_mbps))
        self._link(f"sys/class/net/{name}", "../../devices/" + "/".join(chain) + f"/net/{name}")

    def config(self, bdf: str, data: bytes) -> None:
        """The device's binary ``config`` file (as many bytes as the reader could read)."""
        folder = self._device_folder(bdf)
        (self.root / folder / "config").write_bytes(data)

    def resource(self, bdf: str, bars: list[tuple[int, int, int]]) -> None:
        """``resource``: (start, size, flags) per BAR line, empty lines for the rest (7 lines in all)."""
        lines = [f"0x{start:016x} 0x{start + size - 1:016x} 0x{flags:016x}" for start, size, flags in bars]
        lines += ["0x0000000000000000 0x0000000000000000 0x0000000000000000"] * (7 - len(lines))
        self._write(f"{self._device_folder(bdf)}/resource", "\n".join(lines))

    def iommu_group(self, bdf: str, group: int, kind: str | None) -> None:
        folder = self._device_folder(bdf)
        self._link(f"{folder}/iommu_group", os.path.relpath(f"sys/kernel/iommu_groups/{group}", folder))
        (self.root / f"sys/kernel/iommu_groups/{group}").mkdir(parents=True, exist_ok=True)
        if kind is not None:
            self._write(f"sys/kernel/iommu_groups/{group}/type", kind)

    def iommu_unit(self, name: str) -> None:
        (self.root / f"sys/devices/virtual/iommu/{name}").mkdir(parents=True, exist_ok=True)
        self._link(f"sys/class/iommu/{name}", f"../../devices/virtual/iommu/{name}")

    def cmdline(self, text: str) -> None:
        self._write("proc/cmdline", text)

    def dmi(self, vendor: str, product: str) -> None:
        self._write("sys/class/dmi/id/sys_vendor", vendor)
        self._write("sys/class/dmi/id/product_name", product)

    def _device_folder(self, bdf: str) -> str:
        return os.path.relpath(os.path.realpath(self.root / f"sys/bus/pci/devices/{bdf}"), self.root)

    def numa_node(self, node: int, cpulist: str, mem_kb: int, socket: int, first_cpu: int) -> None:
        self._write(f"sys/devices/system/node/node{node}/cpulist", cpulist)
        self._write(f"sys/devices/system/node/node{node}/meminfo",
                    f"Node {node} MemTotal:       {mem_kb} kB\nNode {node} MemFree:        1000 kB")
        self._write(f"sys/devices/system/cpu/cpu{first_cpu}/topology/physical_package_id", str(socket))


def config_space(acs_control: int | None = 0, *, acs_capability: int = 0x5F, size: int = 4096) -> bytes:
    """PCI config space bytes of a PCIe bridge: a type-1 header, then extended capabilities at 0x100:
    AER (id 0x0001) and, unless ``acs_control`` is None, ACS (id 0x000D) at 0x148 with its capability
    and control registers at +4/+6 (PCIe base spec layout; include/uapi/linux/pci_regs.h offsets).
    ``size`` cuts it as the kernel does for a reader without CAP_SYS_ADMIN (64)."""
    import struct

    data = bytearray(4096)
    struct.pack_into("<HH", data, 0, 0x11F8, 0x4000)
    data[0x0E] = 0x01  # header type 1 (bridge)
    struct.pack_into("<I", data, 0x100, 0x0001 | (2 << 16) | ((0x148 if acs_control is not None else 0) << 20))
    if acs_control is not None:
        struct.pack_into("<I", data, 0x148, 0x000D | (1 << 16))
        struct.pack_into("<HH", data, 0x14C, acs_capability, acs_control)
    return bytes(data[:size])


# ---- the synthetic dual-socket PCIe machine -----------------------------------------------------------

PCIE_2S_GPU_BUSES = ([f"0000:{b:02x}:00.0" for b in (0x03, 0x04, 0x05, 0x06)]
                     + [f"0000:{b:02x}:00.0" for b in (0x83, 0x84, 0x85, 0x86)])
PCIE_2S_CPUS = ("0-31,64-95", "32-63,96-127")


def build_pcie_2s_sysfs(root: Path) -> None:
    """2 sockets; per socket: root port → Microchip Switchtec PCIe Gen4 switch → 4 × A100 PCIe + 1
    ConnectX-6 HDR; plus an onboard Intel NIC on socket 0's root bus and a BMC VGA device."""
    tree = SysfsTree(root)
    for socket, (rb, rp, usp, dsp_bus, gpu_buses, nic_bus, ib) in enumerate((
        ("pci0000:00", "0000:00:01.0", "0000:01:00.0", 0x02, (0x03, 0x04, 0x05, 0x06), 0x07, "mlx5_0"),
        ("pci0000:80", "0000:80:01.0", "0000:81:00.0", 0x82, (0x83, 0x84, 0x85, 0x86), 0x87, "mlx5_1"),
    )):
        cpus = PCIE_2S_CPUS[socket]
        tree.device([rb, rp], "0x060400", "0x8086", "0x347a", socket, cpulist=cpus)
        tree.device([rb, rp, usp], "0x060400", "0x11f8", "0x4000", socket, cpulist=cpus)
        for k, bus in enumerate((*gpu_buses, nic_bus)):
            dsp = f"0000:{dsp_bus:02x}:{k:02x}.0"
            tree.device([rb, rp, usp, dsp], "0x060400", "0x11f8", "0x4000", socket, cpulist=cpus)
            ep = f"0000:{bus:02x}:00.0"
            if bus == nic_bus:
                tree.device([rb, rp, usp, dsp, ep], "0x020700", "0x15b3", "0x101b", socket, cpulist=cpus)
                tree.infiniband(ib, [rb, rp, usp, dsp, ep], "200 Gb/sec (4X HDR)")
                tree.net(f"ib{socket}", [rb, rp, usp, dsp, ep])
            else:
                tree.device([rb, rp, usp, dsp, ep], "0x030200", "0x10de", "0x20b5", socket, cpulist=cpus)
        tree.numa_node(socket, cpus, 263_000_000, socket, 0 if socket == 0 else 32)
    # onboard 1 GbE directly on the root bus (no root port) and a BMC VGA behind its own bridge
    tree.device(["pci0000:00", "0000:00:1f.6"], "0x020000", "0x8086", "0x15b9", 0, speed=None, width=None)
    tree.net("eno1", ["pci0000:00", "0000:00:1f.6"], speed_mbps=1000)
    tree.device(["pci0000:00", "0000:00:1c.0"], "0x060400", "0x8086", "0xa338", 0, speed="2.5 GT/s PCIe", width=1)
    tree.device(["pci0000:00", "0000:00:1c.0", "0000:09:00.0"], "0x030000", "0x1a03", "0x2000", 0,
                speed="2.5 GT/s PCIe", width=1)
    tree.net("lo", None)


def pcie_2s_nvml() -> FakeNVML:
    gpus = []
    for k, bus in enumerate(PCIE_2S_GPU_BUSES):
        socket = 0 if k < 4 else 1
        from linkscope.discovery.sysfs import parse_cpulist

        gpus.append(FakeGpu(bus_id="0000" + bus, uuid=f"GPU-a100pcie-{k:04d}-0000-0000-000000000000",
                            numa_node=socket, cpus=tuple(parse_cpulist(PCIE_2S_CPUS[socket])), pcie=(4, 16)))
    p2p: dict[tuple[int, int], dict[int, int]] = {}
    ancestor: dict[tuple[int, int], int] = {}
    for i in range(8):
        for j in range(i + 1, 8):
            same = (i < 4) == (j < 4)
            ok = 0 if same else 1  # CHIPSET_NOT_SUPPORTED across the socket link
            p2p[(i, j)] = {0: ok, 1: ok, 2: 5, 3: 5 if not same else 0, 4: ok}
            ancestor[(i, j)] = 10 if same else 50  # SINGLE switch / SYSTEM
    return FakeNVML(gpus=gpus, p2p=p2p, ancestor=ancestor)


def hgx_h200_4_nvml() -> FakeNVML:
    """4 × H200 SXM joined directly: 6 NVLink4 links per pair (18 per GPU), 26562 MB/s per link."""
    buses = ["00000000:19:00.0", "00000000:3b:00.0", "00000000:4c:00.0", "00000000:5d:00.0"]
    gpus = []
    for k, bus in enumerate(buses):
        links = []
        for peer in range(4):
            if peer != k:
                links += [(buses[peer], 0, 6, 26562)] * 6
        gpus.append(FakeGpu(bus_id=bus, name="NVIDIA H200", uuid=f"GPU-h200-{k}", memory_bytes=150_754_820_096,
                            numa_node=0 if k < 2 else 1, cpus=tuple(range(k // 2 * 48, k // 2 * 48 + 48)),
                            pcie=(5, 16), nvlinks=links))
    return FakeNVML(gpus=gpus, ancestor={(i, j): 50 if (i < 2) != (j < 2) else 30 for i in range(4) for j in range(4)})


def dgx_h100_nvml() -> FakeNVML:
    """8 × H100 SXM on 4 NVSwitch chips, 5/4/4/5 links per GPU (18), no speed field (datasheet path)."""
    switches = ["00000000:c1:00.0", "00000000:c2:00.0", "00000000:c3:00.0", "00000000:c4:00.0"]
    gpus = []
    for k in range(8):
        links = []
        for s, n in zip(switches, (5, 4, 4, 5)):
            links += [(s, 2, 6, None)] * n
        gpus.append(FakeGpu(bus_id=f"00000000:{0x18 + 0x10 * k:02x}:00.0", name="NVIDIA H100 80GB HBM3",
                            uuid=f"GPU-h100-{k}", numa_node=k // 4, pcie=(5, 16), nvlinks=links, inactive_links=0))
    return FakeNVML(gpus=gpus)


# ---- the MI250X node (HPE Cray EX235a: 4 × MI250X = 8 GCDs), /work/shared/PRESETS.md section 4.a ----------

MI250X_LINKS = {(0, 1): 4, (2, 3): 4, (4, 5): 4, (6, 7): 4, (0, 6): 2, (2, 4): 2,
                (0, 2): 1, (1, 3): 1, (4, 6): 1, (5, 7): 1, (1, 5): 1, (3, 7): 1}
MI250X_NUMA = {0: 3, 1: 3, 2: 1, 3: 1, 4: 0, 5: 0, 6: 2, 7: 2}
MI250X_BUS = ["0000:c1:00.0", "0000:c6:00.0", "0000:c9:00.0", "0000:ce:00.0",
              "0000:d1:00.0", "0000:d6:00.0", "0000:d9:00.0", "0000:de:00.0"]


def _xgmi_hops(n: int = 8) -> dict[tuple[int, int], int]:
    adjacency = {i: set() for i in range(n)}
    for a, b in MI250X_LINKS:
        adjacency[a].add(b)
        adjacency[b].add(a)
    hops = {}
    for s in range(n):
        dist, frontier = {s: 0}, [s]
        while frontier:
            nxt = []
            for u in frontier:
                for v in adjacency[u]:
                    if v not in dist:
                        dist[v] = dist[u] + 1
                        nxt.append(v)
            frontier = nxt
        for t, d in dist.items():
            hops[(s, t)] = d
    return hops


def _banner(title: str, width: int = 80) -> str:
    if not title:
        return "=" * width
    text = f" {title} "
    left = (width - len(text)) // 2
    return "=" * left + text + "=" * (width - left - len(text))


def _table(cells: dict[tuple[int, int], str], n: int) -> list[str]:
    lines = ["       " + "".join(f"GPU{j:<10d}" for j in range(n))]
    for i in range(n):
        lines.append(f"GPU{i:<4d}" + "".join(f"{cells[(i, j)]:<13s}" for j in range(n)))
    return lines


def mi250x_showtopo() -> str:
    """rocm-smi --showtopo text for the 8-GCD node (layout of ROCm/rocm_smi_lib#108): weight 15 per
    xGMI hop, hops 1 for every xGMI pair, link type XGMI."""
    hops = _xgmi_hops()
    n = 8
    weight = {(i, j): "0" if i == j else str(15 * hops[(i, j)]) for i in range(n) for j in range(n)}
    hop = {(i, j): "0" if i == j else "1" for i in range(n) for j in range(n)}
    kind = {(i, j): "0" if i == j else "XGMI" for i in range(n) for j in range(n)}
    lines = [_banner("ROCm System Management Interface"), _banner("Weight between two GPUs"), *_table(weight, n), "",
             _banner("Hops between two GPUs"), *_table(hop, n), "",
             _banner("Link Type between two GPUs"), *_table(kind, n), "", _banner("Numa Nodes")]
    for i in range(n):
        lines.append(f"GPU[{i}]\t\t: (Topology) Numa Node: {MI250X_NUMA[i]}")
        lines.append(f"GPU[{i}]\t\t: (Topology) Numa Affinity: {MI250X_NUMA[i]}")
    lines.append(_banner("End of ROCm SMI Log"))
    return "\n".join(lines) + "\n"


def mi250x_gpu_lines(label: str, values: list[str]) -> str:
    lines = [_banner("ROCm System Management Interface"), _banner("")]
    lines += [f"GPU[{i}]\t\t: {label}: {v}" for i, v in enumerate(values)]
    lines += [_banner(""), _banner("End of ROCm SMI Log")]
    return "\n".join(lines) + "\n"


def mi250x_amdsmi_topology_json() -> str:
    """amd-smi topology --json as amdsmi_cli builds it: per GPU, maps keyed gpu_<id>; numa_bandwidth
    "min-max" in MB/s = 50000 - links × 50000 (amdkfd, MI200), max 0 for indirect peers."""
    import json

    hops = _xgmi_hops()
    out = []
    for i in range(8):
        item = {"gpu": i, "link_accessibility": {}, "weight": {}, "hops": {}, "link_type": {}, "numa_bandwidth": {}}
        for j in range(8):
            key = f"gpu_{j}"
            links = MI250X_LINKS.get((min(i, j), max(i, j)), 0)
            item["link_accessibility"][key] = True
            item["weight"][key] = 0 if i == j else 15 * hops[(i, j)]
            item["hops"][key] = 0 if i == j else 1
            item["link_type"][key] = 0 if i == j else "XGMI"
            item["numa_bandwidth"][key] = "N/A" if i == j else f"50000-{links * 50000}"
        out.append(item)
    return json.dumps(out, indent=4) + "\n"


def mi250x_amdsmi_list_json() -> str:
    import json

    return json.dumps([{"gpu": i, "bdf": bus, "uuid": f"{0x1e + i:02x}ff740c-0000-1000-80ea-a1b2c3d4e5{i:02x}"}
                       for i, bus in enumerate(MI250X_BUS)], indent=4) + "\n"
