import pytest

from linkscope.errors import TopologyError, UserError
from linkscope.patterns.base import peer_waiver, select_gpus
from linkscope.patterns.builtin import ALL_TO_ALL, ALL_TO_HOST, ALL_TO_ONE, HOST_TO_ALL, LOCAL, MATRIX, ONE_TO_ALL, PAIRS, RING
from linkscope.patterns.builtin import HOST_REFERENCE as HOST
from linkscope.patterns.methods import find_method as catalogue_method
from linkscope.patterns.plan import HOST as HOST_END
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:4")
CE = catalogue_method("ce")
H2D = catalogue_method("h2d")
D2H = catalogue_method("d2h")


def pairs_of(plan):
    return [(t.src, t.dst) for t in plan.transfers]


def test_matrix_uni_is_every_ordered_pair_one_at_a_time():
    plans = MATRIX.plan(TOPO, (0, 1, 2, 3), 1024, "ce", "uni")
    assert len(plans) == 12
    assert all(len(p.transfers) == 1 and p.aggregate == "none" for p in plans)
    assert {pairs_of(p)[0] for p in plans} == {(a, b) for a in range(4) for b in range(4) if a != b}
    assert all(p.transfers[0].size_bytes == 1024 and p.method == "ce" and p.pattern == "matrix" for p in plans)


def test_matrix_bi_runs_both_directions_of_each_pair_at_once():
    plans = MATRIX.plan(TOPO, (0, 1, 2), 8, "ce", "bi")
    assert [pairs_of(p) for p in plans] == [[(0, 1), (1, 0)], [(0, 2), (2, 0)], [(1, 2), (2, 1)]]
    assert all(p.direction == "bi" and p.aggregate == "sum" for p in plans)


def test_pairs_are_disjoint_and_concurrent():
    (plan,) = PAIRS.plan(TOPO, (0, 1, 2, 3), 8, "ce", "uni")
    assert pairs_of(plan) == [(0, 1), (2, 3)]
    (plan,) = PAIRS.plan(TOPO, (0, 1, 2), 8, "ce", "bi")
    assert pairs_of(plan) == [(0, 1), (1, 0)]  # the odd GPU sits idle


def test_ring_and_all_to_all():
    (ring,) = RING.plan(TOPO, (0, 1, 2, 3), 8, "ce", "bi")
    assert len(ring.transfers) == 8 and (3, 0) in pairs_of(ring) and (0, 3) in pairs_of(ring)
    (a2a,) = ALL_TO_ALL.plan(TOPO, (0, 1, 2), 8, "ce", "uni")
    assert len(a2a.transfers) == 6 and a2a.aggregate == "sum"


def test_all_to_one_and_one_to_all_one_group_per_hub():
    plans = ALL_TO_ONE.plan(TOPO, (0, 1, 2, 3), 8, "ce", "uni")
    assert len(plans) == 4 and all(p.aggregate == "per_dst" for p in plans)
    assert pairs_of(plans[2]) == [(0, 2), (1, 2), (3, 2)]
    plans = ONE_TO_ALL.plan(TOPO, (0, 1, 2), 8, "ce", "uni")
    assert pairs_of(plans[0]) == [(0, 1), (0, 2)] and plans[0].aggregate == "per_src"


def test_host_patterns_put_host_on_the_right_end():
    (plan,) = ALL_TO_HOST.plan(TOPO, (0, 1), 8, "d2h", "uni")
    assert pairs_of(plan) == [(0, HOST_END), (1, HOST_END)]
    (plan,) = HOST_TO_ALL.plan(TOPO, (0, 1), 8, "h2d", "uni")
    assert pairs_of(plan) == [(HOST_END, 0), (HOST_END, 1)]
    assert [pairs_of(p) for p in HOST.plan(TOPO, (0, 1), 8, "d2h", "uni")] == [[(0, HOST_END)], [(1, HOST_END)]]
    assert [pairs_of(p) for p in HOST.plan(TOPO, (0,), 8, "h2d", "uni")] == [[(HOST_END, 0)]]
    assert [pairs_of(p) for p in LOCAL.plan(TOPO, (0, 1), 8, "local", "uni")] == [[(0, 0)], [(1, 1)]]


def test_waivers_say_why():
    w = MATRIX.applies_to(TOPO, (0,), CE)
    assert w is not None and "needs at least 2 GPUs; 1 selected" in w.reason
    w = RING.applies_to(TOPO, (0, 1), H2D)
    assert w is not None and "'h2d'" in w.reason
    assert MATRIX.applies_to(TOPO, (0, 1), CE) is None
    w = ALL_TO_HOST.applies_to(TOPO, (0, 1), H2D)
    assert w is not None and "use d2h" in w.reason
    assert ALL_TO_HOST.applies_to(TOPO, (0, 1), D2H) is None
    w = HOST.applies_to(TOPO, (0,), catalogue_method("staged"))
    assert w is not None and "no host end" in w.reason
    # the method table lets ce, sm-push ... have a host end (as every engine accepts): not waived
    assert HOST.applies_to(TOPO, (0,), CE) is None and ALL_TO_HOST.applies_to(TOPO, (0, 1), CE) is None
    w = LOCAL.applies_to(TOPO, (0,), CE)
    assert w is not None and "'local'" in w.reason


def test_no_peer_access_hint_waives_only_that_pair():
    topo = TOPO.replace(model_params={"no_peer_access": [[0, 3]]})
    plans = MATRIX.plan(topo, (0, 1, 2, 3), 8, "ce", "uni")
    waived = [p.label for p in plans if peer_waiver(topo, p, CE)]
    assert waived == ["0->3", "3->0"]
    assert "no peer access between GPU 0 and GPU 3" in peer_waiver(topo, plans[2], CE).reason
    assert peer_waiver(topo, plans[2], catalogue_method("ce-nopeer")) is None


def test_select_gpus_rejects_missing_and_duplicate():
    assert select_gpus(TOPO, None) == (0, 1, 2, 3)
    with pytest.raises(TopologyError, match="GPU 7 does not exist") as exc:
        select_gpus(TOPO, [0, 7])
    assert "0..3" in exc.value.one_line()
    with pytest.raises(UserError, match="twice"):
        select_gpus(TOPO, [1, 1])


def test_bad_direction_is_a_user_error():
    with pytest.raises(UserError, match="unknown direction .both."):
        MATRIX.plan(TOPO, (0, 1), 8, "ce", "both")


def test_recorded_nvml_p2p_status_waives_pairs_without_peer_access():
    """NVML discovery records P2P status per GPU pair in the GPU's attributes; a pair whose read or
    write status is not OK (PCIe across sockets) is waived for peer methods, an unrecorded one is not."""
    from dataclasses import replace as dc_replace

    from linkscope.patterns.base import no_peer_access_pairs

    refused = {"read": "CHIPSET_NOT_SUPPORTED", "write": "CHIPSET_NOT_SUPPORTED", "nvlink": "NOT_SUPPORTED"}
    ok = {"read": "OK", "write": "OK", "nvlink": "NOT_SUPPORTED"}
    devices = []
    for d in TOPO.devices:
        if d.is_gpu and d.index == 0:
            d = dc_replace(d, attributes={"p2p": {"gpu1": ok, "gpu2": refused, "gpu3": {"read": None}}})
        devices.append(d)
    topo = TOPO.replace(devices=tuple(devices))
    assert no_peer_access_pairs(topo) == {frozenset((0, 2))}
    plans = MATRIX.plan(topo, (0, 1, 2, 3), 8, "sm-push", "uni")
    assert [p.label for p in plans if peer_waiver(topo, p, catalogue_method("sm-push"))] == ["0->2", "2->0"]
