import itertools

import numpy as np
import pytest

from linkscope.comm.launch import CollectiveError, serial_job
from linkscope.comm.records import stencil_record
from linkscope.comm.stencil import (
    balanced_grid,
    choose_mapping,
    halo_messages,
    parse_slow_pairs,
    process_grid,
    run_stencil,
    traffic_matrix,
)
from linkscope.errors import UserError
from linkscope.report import textformats

from .conftest import moody_backend, sim_backend


@pytest.mark.parametrize("grid,periodic,weighted", [((2, 2), False, False), ((4, 2), True, True),
                                                     ((2, 2, 2), True, False), ((3, 2), False, True)])
def test_messages_match_the_traffic_model(grid, periodic, weighted):
    msgs = halo_messages(grid, periodic, 4096, weighted)
    n = int(np.prod(grid))
    mine = np.zeros((n, n))
    for m in msgs:
        mine[m.src, m.dst] += m.count * 4
    assert np.allclose(mine, traffic_matrix(grid, periodic, 4096, weighted).bytes)


def test_offsets_do_not_overlap():
    msgs = halo_messages((2, 2), True, 1024)
    for r in range(4):
        spans = sorted((m.recv_offset, m.recv_offset + m.count) for m in msgs if m.dst == r)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_grids_and_pairs():
    assert balanced_grid(8, 3) == (2, 2, 2) and balanced_grid(8, 2) == (4, 2)
    assert process_grid(4, 2, "2x2") == (2, 2)
    with pytest.raises(UserError, match="3 dimensions but --dims is 2"):
        process_grid(8, 2, "2x2x2")
    assert parse_slow_pairs("0-1, 2-3") == ((0, 1), (2, 3))
    with pytest.raises(UserError, match="bad GPU pair"):
        parse_slow_pairs("0-0")


def _run(be, grid, mappings, slow=(), **kw):
    job = serial_job()
    return run_stencil(job, be, lambda d: be.init_all(list(d)), grid, mappings, sizes=[1024, 1 << 20], iters=2,
                       runs=4, slow_pairs=slow, **kw)


def test_auto_mapping_beats_default_on_emulated_slow_pairs():
    slow = ((0, 1), (2, 3))
    grid = (2, 2)
    auto, info = choose_mapping("auto", grid, False, True, 4, slow_pairs=slow)
    assert info["cost_us"] < info["default_cost_us"]
    be = sim_backend(4)
    result = _run(be, grid, {"default": (0, 1, 2, 3), "auto": auto}, slow=slow, weighted=True)
    assert all(r.wrong == 0 for r in result.rows)
    gains = dict(result.gains("auto"))
    assert gains[1 << 20] > 0.5  # the heavy axis leaves the host-staged pairs
    text = textformats.stencil_text(stencil_record(result, {}, {}))
    assert "EMULATED" in text and "gain of auto" in text
    rec = stencil_record(result, {}, {})
    assert rec.measurements[0].method == "nccl.sendrecv+emulated"
    assert rec.extra["stencil"]["gains"]["auto"]


def test_uniform_fabric_gives_zero_gain():
    auto, info = choose_mapping("auto", (2, 2), True, False, 4)
    assert info["cost_us"] == pytest.approx(info["default_cost_us"])
    be = sim_backend(4)
    result = _run(be, (2, 2), {"default": (0, 1, 2, 3), "auto": (3, 2, 1, 0)}, periodic=True)
    assert all(abs(g) < 1e-9 for _, g in result.gains("auto"))
    assert "gain ≈ 0" in textformats.stencil_text(stencil_record(result, {}, {}))


def test_grid_that_does_not_match_the_gpus_is_refused():
    be = sim_backend(4)
    with pytest.raises(CollectiveError, match="grid 3x2 has 6 ranks but the job has 4"):
        run_stencil(serial_job(), be, lambda d: be.init_all(list(d)), (3, 2), {"default": (0, 1, 2, 3)})


def _cold_backend(gpus: int, cold_s: float):
    """A simulated node that leaves its idle state slowly: its first ``cold_s`` of device time run at half
    speed (clocks and links ramping up), whatever runs then."""
    from linkscope.comm.nccl_backend import SimNccl
    from linkscope.topology.synthetic import synthetic_topology

    class Cold(SimNccl):
        def __init__(self):
            super().__init__(synthetic_topology(f"nvswitch:{gpus}"))
            self.busy_s = 0.0

        def _run_group(self, key, calls, model):
            before = self.clock.now_s
            super()._run_group(key, calls, model)
            spent = self.clock.now_s - before
            if self.busy_s < cold_s:
                self.clock.now_s += spent  # twice as long while cold
            self.busy_s += spent

    return Cold()


def test_every_mapping_is_warmed_the_same_before_it_is_timed():
    """2 x H200, --emulate-slow-pairs 0-1 (docs/runs/h200x2-2026-11-28/call2): default and auto were the
    same mapping, yet the first-timed one read 63.4 us at 64 KiB and the second 46.5. On a node that is slow
    while it leaves its idle state (here its first 1 ms of work), two identical mappings must read the same:
    before the fix the first mapping's first size was timed cold."""
    be = _cold_backend(4, cold_s=0.001)
    result = run_stencil(serial_job(), be, lambda d: be.init_all(list(d)), (2, 2),
                         {"default": (0, 1, 2, 3), "auto": (0, 1, 2, 3)}, sizes=[1024, 1 << 20], iters=2, runs=4)
    assert all(abs(g) < 1e-9 for _, g in result.gains("auto")), result.gains("auto")
    warmed = [n for n in result.notes if n.startswith("mapping ")]
    assert [n.split()[1] for n in warmed] == ["default", "auto"] and all("(>= 100 ms simulated each time)" in n for n in warmed)


def test_identical_mappings_on_communicators_of_different_modes_read_alike_over_interleaved_sets():
    """One communicator set per mapping read a set's draw as a gain (+30.6% at 64 KiB between two identical
    mappings on 2 x H200); over interleaved sets (default fast, auto slow, then default slow, auto fast) the two
    identical mappings read the same and the verdict is no gain, with the draw in the spread."""
    same = {"default": (0, 1, 2, 3), "auto": (0, 1, 2, 3)}
    be = moody_backend(4, [1.0, 1.4, 1.4, 1.0])
    one = run_stencil(serial_job(), be, lambda d: be.init_all(list(d)), (2, 2), same, sizes=[1 << 16], iters=2,
                      runs=2, comm_sets=1)
    assert one.gains("auto")[0][1] < -0.3  # one set each: the draw reads as a 40% loss
    be = moody_backend(4, [1.0, 1.4, 1.4, 1.0])
    two = run_stencil(serial_job(), be, lambda d: be.init_all(list(d)), (2, 2), same, sizes=[1 << 16], iters=2,
                      runs=2, comm_sets=2)
    assert be.sets == 4 and all(r.sets == 2 and len(r.runs_us) == 4 for r in two.rows)
    assert abs(two.gains("auto")[0][1]) < 1e-9
    assert "gain ≈ 0" in textformats.stencil_text(stencil_record(two, {}, {}))
    assert any("timed on 2 sets of communicators" in n for n in two.notes)


def test_graphs_take_the_launch_out_of_the_exchange_time_and_the_rows_say_so():
    """--cuda-graph: each size's exchange captured into graphs and launched as such (the twin, like NCCL, times a
    captured exchange without a host launch per exchange); eager stays the default of run_stencil."""
    be = sim_backend(4)
    same = {"default": (0, 1, 2, 3), "auto": (3, 2, 1, 0)}
    eager = _run(be, (2, 2), same, periodic=True)
    graphed = _run(be, (2, 2), same, periodic=True, graph_iters=5)
    assert not any(r.graph for r in eager.rows) and all(r.graph for r in graphed.rows)
    small = {r.mapping: r.mean_us for r in graphed.rows if r.size_bytes == 1024}
    small_eager = {r.mapping: r.mean_us for r in eager.rows if r.size_bytes == 1024}
    assert small["default"] < small_eager["default"]  # no host launch per exchange
    assert all(r.wrong == 0 for r in graphed.rows)
    rec = stencil_record(graphed, {}, {"cuda_graph": 5})
    assert all(m.extra["cuda_graph"] is True for m in rec.measurements)
    assert "# launches: CUDA graphs of 5 exchanges" in textformats.stencil_text(rec)


def test_emulated_slow_pairs_are_launched_eagerly_for_every_mapping_and_say_why():
    be = sim_backend(4)
    result = _run(be, (2, 2), {"default": (0, 1, 2, 3), "auto": (1, 0, 3, 2)}, slow=((0, 1),), graph_iters=5)
    assert not any(r.graph for r in result.rows)
    assert any("launched eagerly" in n for n in result.notes)
    assert "# launches: eager" in textformats.stencil_text(stencil_record(result, {}, {"cuda_graph": 5}))


def test_a_capture_that_fails_falls_back_to_eager_launches_with_the_reason():
    be = sim_backend(4)

    def broken(peers, body):
        raise RuntimeError("capture not permitted")
    be.capture = broken
    result = _run(be, (2, 2), {"default": (0, 1, 2, 3)}, graph_iters=5)
    assert not any(r.graph for r in result.rows) and all(r.wrong == 0 for r in result.rows)
    assert any("capture not permitted" in n for n in result.notes)
