"""A fake ``amdsmi`` module that returns what the real library returns on MI200 (MI250X) and
MI300 (MI300X) nodes, in the 6.x and the 7.x enum layouts. Every value below is taken from the
upstream code, not from the documentation's idea of it:

* enums: 6.x (ROCm/amdsmi rocm-6.2 ``py-interface/amdsmi_interface.py:380-394``, ``include/amd_smi/
  amdsmi.h:702-706,1204-1208``): ``AmdSmiIoLinkType`` UNDEFINED 0, PCIEXPRESS 1, XGMI 2 (what
  ``amdsmi_topo_get_link_type`` returns), ``AmdSmiLinkType`` INTERNAL 0, XGMI 1, PCIE 2 (the link
  metrics' ``link_type``). 7.x (amdsmi 7.0.2 wheel, ``amdsmi_wrapper.py:1223-1235``,
  ``amdsmi_interface.py:489-494``): no ``AmdSmiIoLinkType``; ``AmdSmiLinkType`` INTERNAL 0,
  PCIE 1, XGMI 2, NOT_APPLICABLE 3, UNKNOWN 4, for both calls.
* ``amdsmi_get_link_metrics`` exists in the Python layer from 7.x only (ROCm/amdsmi rocm-6.0.0 ...
  rocm-6.2.2 ``py-interface/amdsmi_interface.py`` has no such function; the C call exists from
  rocm-6.1.0 ``include/amd_smi/amdsmi.h:3951``), so the 6.x fake has none. 7.x
  (7.0.2 ``amdsmi_interface.py:3260-3288``): always
  ``AMDSMI_MAX_NUM_XGMI_LINKS`` = 8 slots. C side, 6.2 (``src/amd_smi/amd_smi.cc:1340-1359``):
  ``num_links`` = 8, every slot ``link_type`` XGMI, ``bdf`` never set (formats as
  ``0000:00:00.0``), ``read``/``write`` = the gpu-metrics ``xgmi_*_data_acc``, ``bit_rate`` =
  ``xgmi_link_speed``, ``max_bandwidth`` = ``xgmi_link_width`` (uint16, all-ones when absent).
  C side, 7.x: ``bdf`` memset to 0xFF (formats as ``ffffffffffff:ff:1f.7``) unless the xgmi port map
  resolves the peer, ``bit_rate``/``max_bandwidth`` UINT32_MAX unless the speed is known
  (then speed and speed × width).
* ``amdsmi_get_gpu_enumeration_info`` (7.x only; 7.0.2 ``amdsmi_interface.py:1959-1996``, C side
  ROCm/amdsmi ``src/amd_smi/amd_smi.cc`` at amd-staging 1991c5ce): ``hip_id`` = KFD node id minus the
  smallest GPU node id, ``hip_uuid`` = ``"GPU-%016x"`` of the KFD unique id; the fake's KFD table
  (``kfd_nodes``) is the one ``kfd_tree`` writes as sysfs, so both stay consistent.
* gpu metrics (rocm-6.2 ``rocm_smi/src/rocm_smi_gpu_metrics.cc:1572-1646, 2095-2180, 2600``):
  every field starts all-ones; table v1.3 (MI200) never fills the xGMI fields, v1.4+ (MI300) does.
  The Python layer turns all-ones into "N/A" for ``amdsmi_get_gpu_metrics_info`` only
  (``amdsmi_interface.py:751``, ``:4756-4763``).
* ``amdsmi_topo_get_numa_node_number`` returns a ``c_uint32`` (``amdsmi_interface.py:3187-3203``):
  the kernel's -1 ("no NUMA affinity") arrives as 4294967295.
* ``amdsmi_topo_get_link_type``: ``hops`` is 1 for every xGMI pair, direct or not
  (ROCm/rocm-systems#5763); ``weight`` 15 per xGMI hop (amdkfd, same issue).
* ``amdsmi_get_minmax_bandwidth_between_processors`` (MB/s): min = one link, max = links × min,
  and 0 for peers without a direct link (ROCm/rocm-systems#5763: "we don't set a bandwidth if
  num_links is -1 or 0"); MI200: 50,000 MB/s per link (x16 × 25 Gb/s / 8). MI300X: 64,000 MB/s per
  link is the same kernel formula with 32 Gb/s links, a belief (no MI300X output was found).

The MI250X link graph is the one a real Frontier node reports (``/sys/class/drm/card*/device/
xgmi_num_links``, quoted in ROCm/rocm-systems#5763); MI300X: 8 GPUs, one link per pair.
"""
from __future__ import annotations

from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace

from tests.discovery.discovery_fakes import MI250X_BUS, MI250X_LINKS, MI250X_NUMA

UINT16_MAX, UINT32_MAX, UINT64_MAX = 2**16 - 1, 2**32 - 1, 2**64 - 1
MAX_NUM_XGMI_LINKS = 8
# MI300X bus ids: placeholders in the shape amdsmi prints (no MI300X listing was recorded here)
MI300X_BUS = ["0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
              "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0"]
MI300X_LINKS = {(a, b): 1 for a in range(8) for b in range(a + 1, 8)}


class AmdSmiIoLinkType6(IntEnum):  # 6.x only
    UNDEFINED = 0
    PCIEXPRESS = 1
    XGMI = 2


class AmdSmiLinkType6(IntEnum):
    AMDSMI_LINK_TYPE_INTERNAL = 0
    AMDSMI_LINK_TYPE_XGMI = 1
    AMDSMI_LINK_TYPE_PCIE = 2
    AMDSMI_LINK_TYPE_NOT_APPLICABLE = 3
    AMDSMI_LINK_TYPE_UNKNOWN = 4


class AmdSmiLinkType7(IntEnum):
    AMDSMI_LINK_TYPE_INTERNAL = 0
    AMDSMI_LINK_TYPE_PCIE = 1
    AMDSMI_LINK_TYPE_XGMI = 2
    AMDSMI_LINK_TYPE_NOT_APPLICABLE = 3
    AMDSMI_LINK_TYPE_UNKNOWN = 4


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        super().__init__(f"amdsmi error {err_code}")
        self.err_code = err_code


def format_bdf(domain: int, bus: int, device: int, function: int) -> str:
    """How amdsmi's Python layer prints an ``amdsmi_bdf_t`` (7.0.2 ``amdsmi_interface.py:660-676``:
    hex digits, domain padded to 4, bus and device to 2, function 1)."""
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function:x}"


BDF_ZERO = format_bdf(0, 0, 0, 0)  # 6.x: never set
BDF_ONES = format_bdf(2**48 - 1, 0xFF, 0x1F, 0x7)  # 7.x: memset 0xFF (48/8/5/3-bit fields)


class FakeAmdSmi:
    """Instances behave like the imported module.

    ``layout``: "6" or "7" (enum values and link-metrics filling); ``gpu``: "mi250x" (8 GCDs, gpu
    metrics v1.3, no xGMI accumulators) or "mi300x" (8 GPUs, v1.5, accumulators per link);
    ``resolve_peers``: 7.x with a kernel that exposes the xgmi port map (the slots name their
    peer); ``numa_unknown``: NUMA affinity -1; ``with_link_metrics=False``: an amdsmi older than
    ``amdsmi_get_link_metrics``."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException

    def __init__(self, *, layout: str = "7", gpu: str = "mi250x", resolve_peers: bool = False,
                 with_link_metrics: bool | None = None, fail_init: bool = False, numa_unknown: bool = False,
                 kfd_order: list[int] | None = None) -> None:
        if layout not in ("6", "7") or gpu not in ("mi250x", "mi300x"):
            raise ValueError(f"layout 6|7 and gpu mi250x|mi300x, got {layout!r}, {gpu!r}")
        self.layout, self.gpu, self.resolve_peers, self.numa_unknown = layout, gpu, resolve_peers, numa_unknown
        if layout == "6":
            self.AmdSmiIoLinkType = AmdSmiIoLinkType6
            self.AmdSmiLinkType = AmdSmiLinkType6
        else:
            self.AmdSmiLinkType = AmdSmiLinkType7
        self.bus = MI250X_BUS if gpu == "mi250x" else MI300X_BUS
        self.graph = MI250X_LINKS if gpu == "mi250x" else MI300X_LINKS
        self.link_mbps = 50_000 if gpu == "mi250x" else 64_000
        self.handles = [SimpleNamespace(gcd=i) for i in range(8)]
        self.fail_init = fail_init
        self.initialised = False
        self._links: dict[int, list[int]] = {i: [] for i in range(8)}  # per GPU: peer of each port, in port order
        for (a, b), n in sorted(self.graph.items()):
            self._links[a] += [b] * n
            self._links[b] += [a] * n
        self.read_kb = {(i, k): 0 for i in range(8) for k in range(MAX_NUM_XGMI_LINKS)}
        self.write_kb = dict(self.read_kb)
        if with_link_metrics is None:
            with_link_metrics = layout == "7"
        if with_link_metrics and layout == "6":
            raise ValueError("amdsmi 6.x has no amdsmi_get_link_metrics in its Python layer")
        if not with_link_metrics:
            self.amdsmi_get_link_metrics = None  # type: ignore[assignment]
        if layout == "6":
            self.amdsmi_get_gpu_enumeration_info = None  # type: ignore[assignment]
        # KFD node of each amdsmi GPU: CPU nodes first (one per socket), GPUs after in kfd_order
        # (default: amdsmi's order, which is ascending PCI address here)
        self.kfd_order = list(kfd_order) if kfd_order is not None else list(range(8))
        cpu_nodes = 2 if gpu == "mi300x" else 1
        self.kfd_nodes = {gcd: cpu_nodes + pos for pos, gcd in enumerate(self.kfd_order)}
        self.unique_ids = {i: 0x5A1F_0000_0000_0000 + 0x1_0000_1111 * (i + 1) for i in range(8)}
        self.pcie_width: dict[int, int] = {}
        self.pcie_replays: dict[int, int] = {}
        self.xgmi_status: dict[int, int] = {}

    # -- library --
    def amdsmi_init(self, flags: int = 0) -> None:
        if self.fail_init:
            raise AmdSmiLibraryException(8)  # AMDSMI_STATUS_INIT_ERROR-like
        self.initialised = True

    def amdsmi_shut_down(self) -> None:
        self.initialised = False

    def amdsmi_get_lib_version(self) -> dict:
        return {"major": 25 if self.layout == "7" else 24, "minor": 3, "release": 0}

    def amdsmi_get_processor_handles(self) -> list:
        return list(self.handles)

    # -- per GPU --
    def amdsmi_get_gpu_device_bdf(self, h) -> str:
        return self.bus[h.gcd]

    def amdsmi_get_gpu_device_uuid(self, h) -> str:
        return f"{0x1e + h.gcd:02x}ff740c-0000-1000-80ea-a1b2c3d4e5{h.gcd:02x}"

    def amdsmi_get_gpu_enumeration_info(self, h) -> dict:
        node = self.kfd_nodes[h.gcd]
        return {"drm_render": 128 + h.gcd, "drm_card": h.gcd, "hsa_id": node,
                "hip_id": node - min(self.kfd_nodes.values()), "hip_uuid": f"GPU-{self.unique_ids[h.gcd]:016x}"}

    def kfd_rows(self) -> list[tuple[int, dict[str, int]]]:
        """(node id, properties) of every KFD node, as amdkfd writes them under topology/nodes."""
        rows = [(n, {"cpu_cores_count": 64, "simd_count": 0, "unique_id": 0}) for n in range(min(self.kfd_nodes.values()))]
        for gcd, node in sorted(self.kfd_nodes.items(), key=lambda kv: kv[1]):
            domain, bus, dev_fn = self.bus[gcd].split(":")
            dev, fn = dev_fn.split(".")
            rows.append((node, {"cpu_cores_count": 0, "simd_count": 416 if self.gpu == "mi250x" else 1216,
                                "unique_id": self.unique_ids[gcd], "domain": int(domain, 16),
                                "location_id": (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(fn, 16),
                                "drm_render_minor": 128 + gcd}))
        return rows

    def amdsmi_get_gpu_asic_info(self, h) -> dict:
        if self.gpu == "mi250x":
            return {"market_name": "AMD Instinct MI250X", "vendor_id": 0x1002, "device_id": 0x740C}
        return {"market_name": "AMD Instinct MI300X", "vendor_id": 0x1002, "device_id": 0x74A1}

    def amdsmi_topo_get_numa_node_number(self, h) -> int:
        if self.numa_unknown:
            return UINT32_MAX  # c_uint32 of the kernel's -1
        return MI250X_NUMA[h.gcd] if self.gpu == "mi250x" else h.gcd // 4

    def amdsmi_get_pcie_info(self, h) -> dict:
        # amdsmi_pcie_info_t (amdsmi.h): speeds in MT/s; counters uint64, "N/A" in Python where unsupported
        return {"pcie_static": {"max_pcie_width": 16, "max_pcie_speed": 16000},
                "pcie_metric": {"pcie_width": self.pcie_width.get(h.gcd, 16), "pcie_speed": 16000,
                                "pcie_replay_count": self.pcie_replays.get(h.gcd, 0), "pcie_l0_to_recovery_count": 0,
                                "pcie_replay_roll_over_count": 0, "pcie_nak_sent_count": "N/A",
                                "pcie_nak_received_count": "N/A"}}

    def amdsmi_gpu_xgmi_error_status(self, h) -> int:
        """AMDSMI_XGMI_STATUS_NO_ERRORS 0, _ERROR 1, _MULTIPLE_ERRORS 2."""
        return self.xgmi_status.get(h.gcd, 0)

    # -- pairs --
    def _direct(self, a: int, b: int) -> int:
        return self.graph.get((min(a, b), max(a, b)), 0)

    def amdsmi_topo_get_link_type(self, a, b) -> dict:
        xgmi = self.AmdSmiIoLinkType.XGMI if self.layout == "6" else self.AmdSmiLinkType.AMDSMI_LINK_TYPE_XGMI
        return {"hops": 1, "type": int(xgmi)}  # plain ints, as ctypes .value gives

    def amdsmi_topo_get_link_weight(self, a, b) -> int:
        return 15 if self._direct(a.gcd, b.gcd) else 30

    def amdsmi_get_minmax_bandwidth_between_processors(self, a, b) -> dict:
        n = self._direct(a.gcd, b.gcd)
        return {"min_bandwidth": self.link_mbps if n else 0, "max_bandwidth": self.link_mbps * n}

    def amdsmi_is_P2P_accessible(self, a, b) -> bool:
        return True

    def _has_accumulators(self) -> bool:
        return self.gpu == "mi300x"  # gpu metrics v1.4+ (MI300); v1.3 (MI200) leaves them all-ones

    def _link_speed_width(self) -> tuple[int, int]:
        return (32, 16) if self.gpu == "mi300x" else (UINT16_MAX, UINT16_MAX)

    def amdsmi_get_gpu_metrics_info(self, h) -> dict:
        speed, width = self._link_speed_width()
        if self._has_accumulators():
            reads = [self.read_kb[(h.gcd, k)] for k in range(MAX_NUM_XGMI_LINKS)]
            writes = [self.write_kb[(h.gcd, k)] for k in range(MAX_NUM_XGMI_LINKS)]
        else:
            reads = writes = ["N/A"] * MAX_NUM_XGMI_LINKS
        return {"xgmi_read_data_acc": reads, "xgmi_write_data_acc": writes,
                "xgmi_link_speed": "N/A" if speed == UINT16_MAX else speed,
                "xgmi_link_width": "N/A" if width == UINT16_MAX else width}

    def amdsmi_get_link_metrics(self, h) -> dict:
        speed, width = self._link_speed_width()
        ports = self._links[h.gcd]
        xgmi = int(self.AmdSmiLinkType.AMDSMI_LINK_TYPE_XGMI)
        links = []
        for k in range(MAX_NUM_XGMI_LINKS):
            if self.layout == "6":
                bdf, bit_rate, max_bw = BDF_ZERO, speed, width
            else:
                bdf = self.bus[ports[k]] if self.resolve_peers and k < len(ports) else BDF_ONES
                bit_rate = speed if speed != UINT16_MAX else UINT32_MAX
                max_bw = speed * width if UINT16_MAX not in (speed, width) else UINT32_MAX
            acc = self._has_accumulators()
            links.append({"bdf": bdf, "bit_rate": bit_rate, "max_bandwidth": max_bw, "link_type": xgmi,
                          "read": self.read_kb[(h.gcd, k)] if acc else UINT64_MAX,
                          "write": self.write_kb[(h.gcd, k)] if acc else UINT64_MAX})
        num = len(ports) if self.layout == "7" and self.resolve_peers else MAX_NUM_XGMI_LINKS
        return {"num_links": num, "links": links}

    # -- test helper: move bytes over GPU a's port k (write on a, read on the peer's matching port) --
    def move(self, a: int, k: int, kib: int) -> None:
        self.write_kb[(a, k)] += kib
        peer = self._links[a][k]
        back = next(i for i, p in enumerate(self._links[peer]) if p == a)
        self.read_kb[(peer, back)] += kib


def write_kfd_tree(fake: FakeAmdSmi, root: Path) -> Path:
    """The fake's KFD table as amdkfd writes it: ``root/nodes/<n>/properties`` (``name value`` lines)."""
    nodes = root / "nodes"
    for node, props in fake.kfd_rows():
        (nodes / str(node)).mkdir(parents=True)
        (nodes / str(node) / "properties").write_text("".join(f"{k} {v}\n" for k, v in props.items()))
    return nodes


def kfd_table(fake: FakeAmdSmi, root: Path) -> list:
    """The fake node's KFD GPUs as ``hipdevices.read_kfd_gpus`` reads them, every render node openable."""
    from linkscope.discovery.hipdevices import read_kfd_gpus

    gpus = read_kfd_gpus(write_kfd_tree(fake, root), root / "dri", render_opens=lambda _d, _m: True)
    assert gpus is not None
    return gpus
