"""PCIe link rates from speed (GT/s) or generation and width: one home for discovery, synthetic
topologies and the GPU facts table.

Rate per direction = GT/s x lanes x encoding / 8: 8b/10b up to 5 GT/s (Gen1-2), 128b/130b for
8-32 GT/s (Gen3-5), 242/256 FLIT mode for 64 GT/s (Gen6) (PCI Express Base Specifications 3.0-6.0);
e.g. Gen4 x16 = 31.508 GB/s, as hwloc reports it. Protocol overhead (TLP headers) is not included:
the model's ``link_efficiency.pcie<N>`` carries it.

>>> pcie_gen_gb_per_s(5, 16)
63.015
"""
from __future__ import annotations

GEN_OF_GT = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
GT_OF_GEN = {gen: gt for gt, gen in GEN_OF_GT.items()}  # PCIe generation -> GT/s per lane


def pcie_gb_per_s(speed_gt_per_s: float, width: int) -> float:
    """Per-direction payload rate of a PCIe link in GB/s (line encoding included, protocol overhead not)."""
    if speed_gt_per_s <= 5.0:
        encoding = 8 / 10
    elif speed_gt_per_s >= 64.0:
        encoding = 242 / 256
    else:
        encoding = 128 / 130
    return round(speed_gt_per_s * width * encoding / 8, 3)


def pcie_gen_gb_per_s(generation: int, width: int) -> float | None:
    """Per-direction payload rate (as ``pcie_gb_per_s``) of a link given by generation and width."""
    gt = GT_OF_GEN.get(int(generation))
    return pcie_gb_per_s(gt, int(width)) if gt else None


def pcie_generation(speed_gt_per_s: float, width: int) -> str:
    """``PCIe Gen5 x16`` (or ``PCIe 12 GT/s x4`` for a speed of no generation)."""
    gen = GEN_OF_GT.get(float(speed_gt_per_s))
    return f"PCIe Gen{gen} x{width}" if gen else f"PCIe {speed_gt_per_s:g} GT/s x{width}"
