"""A fake ``amdsmi`` module following the documented Python API (ROCm/amdsmi py-interface and the
amdsmi reference: processor handles, topo link type/weight, min/max bandwidth, link metrics with
per-link read/write KB counters). It models the HPE Cray EX235a MI250X node (8 GCDs) of
discovery_fakes.MI250X_LINKS; no AMD GPU was used to write it."""
from __future__ import annotations

from enum import IntEnum
from types import SimpleNamespace

from tests.discovery.discovery_fakes import MI250X_BUS, MI250X_LINKS, MI250X_NUMA


class AmdSmiIoLinkType(IntEnum):
    UNDEFINED = 0
    PCIEXPRESS = 1
    XGMI = 2


class AmdSmiLinkType(IntEnum):
    AMDSMI_LINK_TYPE_INTERNAL = 0
    AMDSMI_LINK_TYPE_XGMI = 1
    AMDSMI_LINK_TYPE_PCIE = 2


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        super().__init__(f"amdsmi error {err_code}")
        self.err_code = err_code


class FakeAmdSmi:
    """Instances behave like the imported module. ``with_link_metrics=False`` is an older amdsmi."""

    AmdSmiIoLinkType = AmdSmiIoLinkType
    AmdSmiLinkType = AmdSmiLinkType
    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException

    def __init__(self, *, with_link_metrics: bool = True, fail_init: bool = False) -> None:
        self.handles = [SimpleNamespace(gcd=i) for i in range(8)]
        self.fail_init = fail_init
        self.initialised = False
        self.read_kb = {(i, k): 0 for i in range(8) for k in range(8)}
        self.write_kb = dict(self.read_kb)
        self._links = {i: [] for i in range(8)}  # per GCD: peer of each physical link, in link order
        for (a, b), n in sorted(MI250X_LINKS.items()):
            self._links[a] += [b] * n
            self._links[b] += [a] * n
        if not with_link_metrics:
            self.amdsmi_get_link_metrics = None  # type: ignore[assignment]
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
        return {"major": 25, "minor": 3, "release": 0}

    def amdsmi_get_processor_handles(self) -> list:
        return list(self.handles)

    # -- per GPU --
    def amdsmi_get_gpu_device_bdf(self, h) -> str:
        return MI250X_BUS[h.gcd]

    def amdsmi_get_gpu_device_uuid(self, h) -> str:
        return f"{0x1e + h.gcd:02x}ff740c-0000-1000-80ea-a1b2c3d4e5{h.gcd:02x}"

    def amdsmi_get_gpu_asic_info(self, h) -> dict:
        return {"market_name": "AMD Instinct MI250X", "vendor_id": 0x1002, "device_id": 0x740C}

    def amdsmi_topo_get_numa_node_number(self, h) -> int:
        return MI250X_NUMA[h.gcd]

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
    def amdsmi_topo_get_link_type(self, a, b) -> dict:
        return {"hops": 1, "type": AmdSmiIoLinkType.XGMI}

    def amdsmi_topo_get_link_weight(self, a, b) -> int:
        return 15 if b.gcd in self._links[a.gcd] else 30

    def amdsmi_get_minmax_bandwidth_between_processors(self, a, b) -> dict:
        n = MI250X_LINKS.get((min(a.gcd, b.gcd), max(a.gcd, b.gcd)), 0)
        return {"min_bandwidth": 50000, "max_bandwidth": 50000 * n}

    def amdsmi_is_P2P_accessible(self, a, b) -> bool:
        return True

    def amdsmi_get_link_metrics(self, h) -> dict:
        links = [{"bdf": MI250X_BUS[peer], "bit_rate": 400, "max_bandwidth": 400,
                  "link_type": AmdSmiLinkType.AMDSMI_LINK_TYPE_XGMI,
                  "read": self.read_kb[(h.gcd, k)], "write": self.write_kb[(h.gcd, k)]}
                 for k, peer in enumerate(self._links[h.gcd])]
        return {"num_links": len(links), "links": links}

    # -- test helper: move bytes over GCD a's link k (write on a, read on the peer's matching link) --
    def move(self, a: int, k: int, kib: int) -> None:
        self.write_kb[(a, k)] += kib
        peer = self._links[a][k]
        back = next(i for i, p in enumerate(self._links[peer]) if p == a)
        self.read_kb[(peer, back)] += kib
