"""model/rccl.py: RCCL's rings on AMD GPUs instead of NCCL's one-ring fallback."""
from pathlib import Path

from linkscope.model import rccl
from linkscope.model.collectives import CollectiveModel
from linkscope.topology.io import load
from linkscope.topology.presets import load_preset

MI300X = Path(__file__).resolve().parents[1] / "fixtures" / "topologies" / "mi300x-8.json"
MIB, GIB = 1 << 20, 1 << 30


def test_rome_model_79_rings_use_every_xgmi_link_twice():
    """rocm-6.2.2 rome_models.cc:549-561: 14 distinct rings over 8 GPUs, each directed link used twice."""
    uses: dict[tuple[int, int], int] = {}
    for ring in rccl.ROME_MODEL_79_RINGS:
        assert sorted(ring) == list(range(8))
        for k in range(8):
            arc = (ring[k], ring[(k + 1) % 8])
            uses[arc] = uses.get(arc, 0) + 1
    assert len(uses) == 56 and set(uses.values()) == {2}


def test_mi300x_allreduce_drives_all_seven_links():
    """8 x MI300X (fixture topology: full xGMI mesh, 48 of 64 GB/s usable per link, AMD's ROCm blog): RCCL's
    28 channels over 14 rings; busbw within 15% of the public 271-314 GB/s at 64 MiB-1 GiB (issue 35). The
    old twin ran one ring over one link per hop: 49 GB/s (-82% to -84%)."""
    model = CollectiveModel.of(load(MI300X))
    for size in (64 * MIB, GIB):
        chosen = model.predict("allreduce", list(range(8)), size).chosen
        assert chosen.channels == rccl.ROME_MODEL_79_CHANNELS and "RCCL" in chosen.basis
        assert 271 * 0.85 <= chosen.busbw_gb_per_s <= 314 * 1.15
    small = model.predict("allreduce", [0, 1, 2, 3], GIB).chosen  # 4 of 8: the search's rings, fewer links each
    assert small.channels >= 2 and small.busbw_gb_per_s < model.predict("allreduce", list(range(8)), GIB).chosen.busbw_gb_per_s


def test_mi250x_gets_more_than_one_ring():
    """The MI250X preset's 8 GCDs: arc-disjoint rings over their direct xGMI links (was one ring, 36.7 GB/s)."""
    chosen = CollectiveModel.of(load_preset("mi250x-8gcd")).predict("allreduce", list(range(8)), GIB).chosen
    assert chosen.channels >= 4 and chosen.busbw_gb_per_s > 2 * 36.7


def test_ring_search_finds_disjoint_cycles_and_gives_up_cleanly():
    full4 = {(a, b) for a in range(4) for b in range(4) if a != b}
    found, channels = rccl.rings(full4, 4, "gfx90a")
    arcs = [(r[k], r[(k + 1) % 4]) for r in found for k in range(4)]
    assert len(found) >= 2 and len(arcs) == len(set(arcs)) and channels == 2 * len(found)
    assert rccl.rings({(0, 1), (1, 0)}, 3, "gfx942") == ([], 0)  # no ring over direct links: NCCL's fallback
    assert rccl.gfx_of(type("G", (), {"name": "AMD Instinct MI300X", "attributes": {}})()) == "gfx942"


def test_mi300x_ring_pays_rccls_per_step_latency_and_picks_ll_or_simple():
    """rome_model_79 names tuning model 5 (rome_models.cc:560), whose Ring hwLat on xGMI is LL 0.8 us and Simple
    2.1 us a step in RCCL 2.21.5 (tuning.cc:224-227; 3.6 at rocm-6.2.2), LL128 off on gfx942. The twin's ring had
    no step latency and Simple at every size."""
    model = CollectiveModel.of(load_preset("mi300x-8"))
    ranks = list(range(8))
    big = model.predict("allreduce", ranks, 64 * MIB).chosen
    small = model.predict("allreduce", ranks, MIB).chosen
    assert big.protocol == "Simple" and small.protocol == "LL"
    assert rccl.tuning_model({(a, b) for a in ranks for b in ranks if a != b}, 8, "gfx942") == 5
    # the 14 steps' latency is in the time: 64 MiB at least 14 steps' latency above the data's time at the same rate
    huge = model.predict("allreduce", ranks, 1024 * MIB).chosen
    rate_us_per_byte = huge.time_us / (1024 * MIB)
    assert big.time_us - rate_us_per_byte * 64 * MIB > 14 * rccl.RING_STEP_LATENCY_US[5]["Simple"] * 0.9
    # a machine whose tuning model the twin does not know keeps its Simple ring without step latencies
    mi250 = CollectiveModel.of(load_preset("mi250x-8gcd")).predict("allreduce", ranks, MIB).chosen
    assert mi250.protocol == "Simple"
