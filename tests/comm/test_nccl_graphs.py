"""CUDA-graph launches at every size (nccl-tests -G N), and the launch cost on record: the runner
against a simulated backend that stands in for a real one with graphs (capture records the body,
launch replays it), so what is checked is the runner's choice, not NCCL."""
from __future__ import annotations

from linkscope.comm.launch import serial_job
from linkscope.comm.nccl import make_peers, run_nccl
from linkscope.comm.nccl_backend import SimNccl
from linkscope.comm.records import nccl_record
from linkscope.topology.synthetic import synthetic_topology


class GraphCapable(SimNccl):
    """SimNccl that behaves as a real backend for the launch path: graphs are captured bodies."""

    simulated = False

    def __init__(self, topology):
        super().__init__(topology)
        self.captures: list[int] = []

    def capture(self, peers, body):
        self.captures.append(1)
        return [body for _ in peers]

    def launch(self, peers, graphs):
        graphs[0]()


def test_graphs_are_used_at_every_size_not_only_up_to_1_mib():
    """4 x H200 (2026-11-28): above 1 MiB every op was launched from Python; alltoall took a flat
    112-124 us from 2 to 32 MiB where nccl-tests -G 20 took 21-97 us."""
    be = GraphCapable(synthetic_topology("nvswitch:4"))
    job = serial_job()
    sizes = [8, 1 << 20, 4 << 20, 64 << 20]
    result = run_nccl(job, be, make_peers(job, be, None), "alltoall", sizes, iters=4, warmup=2, graph_iters=4,
                      verify=False)
    assert [r.graph for r in result.rows] == [True, True, True, True]
    assert len(be.captures) == len(sizes)


def test_eager_mode_stays_eager_and_the_launch_cost_is_recorded():
    be = GraphCapable(synthetic_topology("nvswitch:2"))
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1 << 10, 16 << 20], iters=2, warmup=3,
                      graph_iters=0, verify=False)
    assert [r.graph for r in result.rows] == [False, False] and not be.captures
    assert all(r.launch_us is not None and r.launch_us > 0 for r in result.rows)
    extra = nccl_record(result, {}, {}).measurements[0].extra
    assert extra["cuda_graph"] is False and extra["launch_us"] > 0


def test_a_launch_is_bound_once_and_replays_the_library_calls():
    """Eager launches from Python cost what each launch does: views and pointers are resolved once per
    size (comm.nccl.prepared), then every launch is the group's library calls alone."""
    from linkscope.comm.nccl import _Buffers, prepared
    from linkscope.model.collectives import layout

    class Recording(GraphCapable):
        def __init__(self, topology):
            super().__init__(topology)
            self.bound, self.made = 0, []

        def bind(self, name, args):
            self.bound += 1
            return (lambda *a, name=name: self.made.append((name, a[0].rank))), args

    be = Recording(synthetic_topology("nvswitch:2"))
    job = serial_job()
    peers = make_peers(job, be, None)
    lay = layout("alltoall", 1 << 20, 2)
    bufs = _Buffers.allocate(be, peers, lay).views("alltoall", peers, lay, False)
    launch = prepared(be, "alltoall", peers, bufs, lay, 2)
    assert be.bound == 8  # 2 peers x (2 sends + 2 receives), bound once
    launch()
    launch()
    assert be.bound == 8 and len(be.made) == 16
    assert [n for n, _ in be.made[:8]] == ["send", "send", "recv", "recv"] * 2


def test_cupy_backend_binds_each_call_to_the_communicator_with_plain_arguments():
    from types import SimpleNamespace

    from linkscope.comm.nccl_backend import CupyNccl, Peer

    seen = []

    class Comm:
        def __getattr__(self, name):
            return lambda *a: seen.append((name, a))

    nccl = SimpleNamespace(NCCL_FLOAT32=7, NCCL_SUM=0)
    be = CupyNccl(cp=SimpleNamespace(), nccl=nccl, runtime=SimpleNamespace())
    p = Peer(0, 0, Comm(), SimpleNamespace(ptr=99))
    buf = SimpleNamespace(data=SimpleNamespace(ptr=4096))
    out = SimpleNamespace(data=SimpleNamespace(ptr=8192))
    for name, args in (("allreduce", (p, buf, out, 5)), ("send", (p, buf, 5, 1)), ("broadcast", (p, buf, out, 5, 0))):
        fn, plain = be.bind(name, args)
        fn(*plain)
    assert seen == [("allReduce", (4096, 8192, 5, 7, 0, 99)), ("send", (4096, 5, 7, 1, 99)),
                    ("broadcast", (4096, 8192, 5, 7, 0, 99))]
