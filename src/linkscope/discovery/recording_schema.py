"""The schema of each JSON file of a recording (``topo export --raw``), checked by ``raw.load_recorded``
before discovery or the health report reads it: a hand-edited or damaged ``nvml.json`` (``[]``,
``"gpus": "none"``, an index that is text) is one line naming its JSON path, not a traceback.

Only the fields the readers use are named; the rest is checked as free JSON (no control characters,
finite numbers), as for every other user file (``userschema``)."""
from __future__ import annotations

from ..userschema import Flag, Free, List, Number, Record, Spec, Text

_INDEX = Number(0, 1 << 20, integer=True)
_COUNT = Number(0, 1 << 40, integer=True, null=True)
_BUS = Text(max_len=64)

NVML_FACTS = Record(
    fields={
        "hostname": Text(max_len=256, null=True),
        "gpus": List(Record(
            fields={
                "index": _INDEX,
                "pci_bus_id": _BUS,
                "name": Text(max_len=256, null=True),
                "uuid": Text(max_len=256, null=True),
                "memory_bytes": Number(0, 2.0**60, integer=True, null=True),
                "numa_node": Number(-1, 1 << 16, integer=True, null=True),
                "cpu_affinity": List(Number(0, 1 << 20, integer=True), max_len=1 << 20, null=True),
                "pcie": Record(values=Number(0, 1 << 20, null=True), null=True),
                "nvlinks": List(Record(fields={
                    "link": Number(0, 1 << 10, integer=True),
                    "active": Flag(null=True),
                    "version": Number(0, 1 << 10, integer=True, null=True),
                    "remote_pci_bus_id": Text(max_len=64, null=True),
                    "remote_device_type": Text(max_len=64, null=True),
                    "speed_mbps": Number(0, 1e9, null=True),
                }, required=("link",)), max_len=1 << 10, null=True),
                "link_health": Free(),
            },
            required=("index", "pci_bus_id")), max_len=1 << 16),
        "pairs": List(Record(fields={
            "a": _INDEX,
            "b": _INDEX,
            "p2p": Record(values=Text(max_len=64, null=True), null=True),
            "common_ancestor": Text(max_len=64, null=True),
        }, required=("a", "b")), max_len=1 << 24, null=True),
    },
    required=("gpus",))
"""``nvml.json``: ``discovery.nvml.read_facts`` output."""

_PCI_DEVICE = Record(fields={
    "numa_node": Number(-1, 1 << 16, integer=True, null=True),
    "chain": List(Text(max_len=64), max_len=64, null=True),
    "link": Record(values=Number(0, 1 << 20, null=True), null=True),
})

SYSFS_FACTS = Record(fields={"pci": Record(values=_PCI_DEVICE), "nics": Free(), "numa": Free()}, required=("pci",))
"""``sysfs.json``: ``discovery.sysfs.read_facts`` output."""

PCIHEALTH_FACTS = Record(fields={
    "devices": Record(values=Record(fields={
        "config": Record(fields={"status": Text(max_len=64)}, required=("status",)),
        "bars": List(Record(fields={"index": Number(0, 64, integer=True),
                                    "size_bytes": Number(0, 2.0**62, integer=True, null=True)}), max_len=64, null=True),
    }, required=("config",))),
}, required=("devices",))
"""``pcihealth.json``: ``discovery.pcihealth.read_facts`` output."""

AMDSMI_FACTS = Record()
"""``amdsmi.json``: ``discovery.amdsmi.read_facts`` output (its reader checks each GPU's fields)."""

SCHEMAS: dict[str, Spec] = {"nvml.json": NVML_FACTS, "sysfs.json": SYSFS_FACTS, "pcihealth.json": PCIHEALTH_FACTS,
                            "amdsmi.json": AMDSMI_FACTS}
"""The schema of each recorded JSON file, by its name in the recording folder."""
