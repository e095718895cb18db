"""What the machine is: the topology model, its queries, its JSON form, presets and synthetic specs."""
from .levels import PairLevel
from .model import Device, DeviceKind, Link, LinkKind, Provenance, Topology

__all__ = ["Device", "DeviceKind", "Link", "LinkKind", "PairLevel", "Provenance", "Topology"]
