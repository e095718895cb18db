"""The real 2 x H200 machine of this project's device pool, recorded on 2026-11-22 with
`bash bench/record_machine.sh hgx-h200-2` (nvidia-smi topo -m there: GPU0-GPU1 NV18)."""
from pathlib import Path

import pytest

from linkscope.discovery.raw import load_recording
from linkscope.topology import query

FIXTURE = Path(__file__).parents[1] / "fixtures" / "machines" / "hgx-h200-2"


def test_recorded_h200_pair_is_nv18_at_478_gb_per_s():
    topology = load_recording(FIXTURE)
    assert topology.gpu_count == 2
    assert [g.name for g in topology.gpus] == ["NVIDIA H200", "NVIDIA H200"]
    assert query.pair_level(topology, 0, 1).code == "NV18"
    assert query.theoretical_gb_per_s(topology, 0, 1) == pytest.approx(18 * 26.562, rel=1e-3)
    assert [g.pci_bus_id for g in topology.gpus] == ["0000:00:06.0", "0000:00:07.0"]
