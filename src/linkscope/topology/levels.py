"""Pair levels with nvidia-smi's codes, and the distance metric.

Distance ranks, closest first (a GPU with itself is 0)::

    X      0  the same device
    NV#    1  NVLink, direct or through an NVSwitch plane (# = bonded links)
    XGMI#  1  Infinity Fabric, direct (# = links)
    XGMI-Nhop 2  Infinity Fabric routed through other GCDs
    PIX    3  through at most one PCIe switch
    PXB    4  through several PCIe switches, no host bridge
    PHB    5  through a PCIe host bridge (the CPU's root complex)
    NODE   6  through several host bridges of one NUMA node / socket
    SYS    7  across the socket interconnect (UPI/QPI/xGMI between sockets)
    NET    8  across a network (another node)

``level = MAX_LEVEL - distance`` is the closeness (higher is closer, like hwloc's matrices), so the
distance metric of the topology-aware mapping literature is ``max level − level``.
"""
from __future__ import annotations

from dataclasses import dataclass

DISTANCE_OF_CODE = {
    "X": 0,
    "NV": 1,
    "XGMI": 1,
    "XGMI-HOP": 2,
    "PIX": 3,
    "PXB": 4,
    "PHB": 5,
    "NODE": 6,
    "SYS": 7,
    "NET": 8,
}
MAX_LEVEL = max(DISTANCE_OF_CODE.values())
#: the families of a pair joined directly by a GPU fabric (NVLink, xGMI), numbered by bonded links
FABRIC_FAMILIES = ("NV", "XGMI")

LEGEND = (
    ("X", "self"),
    ("NV#", "NVLink, direct or through NVSwitch (# bonded links)"),
    ("XGMI#", "Infinity Fabric, direct (# links)"),
    ("XGMI-Nhop", "Infinity Fabric through N-1 other GCDs"),
    ("PIX", "at most one PCIe switch"),
    ("PXB", "several PCIe switches, no host bridge"),
    ("PHB", "a PCIe host bridge (CPU root complex)"),
    ("NODE", "several host bridges within one NUMA node"),
    ("SYS", "across the socket interconnect (UPI/QPI)"),
    ("NET", "across the network"),
)


@dataclass(frozen=True)
class PairLevel:
    """The level of a device pair.

    Attributes:
        family: key of DISTANCE_OF_CODE (``NV``, ``PIX``, ``XGMI-HOP`` ...).
        count: bonded links for NV/XGMI, hops for XGMI-HOP, else None.
    """

    family: str
    count: int | None = None

    @property
    def over_fabric(self) -> bool:
        """The pair talks over a GPU fabric link (NVLink, xGMI), not PCIe or the host."""
        return self.family in FABRIC_FAMILIES

    @property
    def code(self) -> str:
        """nvidia-smi style code: ``NV18``, ``XGMI4``, ``XGMI-2hop``, ``PIX``, ``SYS``."""
        if self.over_fabric and self.count:
            return f"{self.family}{self.count}"
        if self.family == "XGMI-HOP":
            return f"XGMI-{self.count}hop"
        return self.family

    @property
    def distance(self) -> int:
        return DISTANCE_OF_CODE[self.family]

    @property
    def level(self) -> int:
        """Closeness: MAX_LEVEL for a device with itself, lower for farther pairs."""
        return MAX_LEVEL - self.distance

    def __str__(self) -> str:
        return self.code
