"""The collective descriptor (``linkscope.collectives``) is the one home of what an operation is
(ARCHITECTURE.md "one home"): nothing else in src/ branches on an operation's name, the table is
consistent with itself, and one more row is enough for the simulated backend, the predictor, the
text formats and the nccl-tests reader to know a new operation."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from linkscope import collectives as coll
from linkscope.errors import UserError

SRC = Path(__file__).resolve().parents[1] / "src" / "linkscope"
HOME = SRC / "collectives.py"

#: Comparisons with a collective's name that are not about the descriptor's operations, each with why:
#: (file under src/linkscope, the compared expression as ``ast.unparse`` writes it).
NOT_COLLECTIVES = {
    ("comm/mpi_p2p.py", "test"): "OSU's MPI tests (latency, bw, bibw, allreduce): MPI_Allreduce, not the NCCL descriptor",
    ("comm/mpi_p2p.py", "self.test"): "OSU's MPI tests",
    ("comm/records.py", "result.test"): "OSU's MPI tests",
    ("report/textformats.py", "test"): "OSU's MPI tests",
    ("report/textformats.py", "info.get('test')"): "OSU's MPI tests",
}


def _spellings() -> set[str]:
    out: set[str] = set(coll.PEER_ONLY_PROGRAMS)
    for op in coll.TABLE:
        out |= {op.name, *op.aliases, op.program, op.nccl_func or op.name}
    return {s.lower() for s in out if s}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def op_branches(text: str, rel: str, spellings: set[str]) -> list[str]:
    """Every place in ``path`` that branches on a collective's name: a comparison or membership test
    with a name (or a tuple of names), a dict keyed by two or more names (a lookup table per op), or a
    ``case`` on a name. ``rel``: the file's path under src/linkscope."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s for s in sides if {v.lower() for v in _strings(s)} & spellings]
            for side in named:
                others = [ast.unparse(s) for s in sides if s is not side]
                if any((rel, other) not in NOT_COLLECTIVES for other in others):
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = [k.value.lower() for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if len(set(keys) & spellings) >= 2:
                found.append(f"{rel}:{node.lineno}: a table keyed by operation names")
        elif isinstance(node, ast.MatchValue) and {v.lower() for v in _strings(node.value)} & spellings:
            found.append(f"{rel}:{node.lineno}: case {ast.unparse(node.value)}")
    return found


def test_no_branch_on_an_operation_name_outside_the_descriptor():
    spellings = _spellings()
    found = [hit for path in sorted(SRC.rglob("*.py")) if path != HOME
             for hit in op_branches(path.read_text(encoding="utf-8"), path.relative_to(SRC).as_posix(), spellings)]
    assert not found, "branches on an operation's name outside linkscope/collectives.py:\n" + "\n".join(found)


def test_the_scan_sees_each_spelling_of_a_branch():
    """The scan is not blind: each form of branch it promises to find is found, also where an OSU test
    is exempt (the exemption is for the OSU expression only), and the OSU test itself is not."""
    spellings = _spellings()
    probe = ('if op == "allreduce": pass\n'
             'if kind in ("allgather", "reduce_scatter"): pass\n'
             'x = {"allreduce": 2, "allgather": 1}[op]\n'
             'if name != "all_reduce": pass\n'
             'match op:\n    case "broadcast": pass\n')
    assert len(op_branches(probe, "comm/mpi_p2p.py", spellings)) == 5
    assert op_branches('if test == "allreduce": pass\n', "comm/mpi_p2p.py", spellings) == []
    assert len(op_branches('if test == "allreduce": pass\n', "comm/nccl.py", spellings)) == 1


# ---- the table agrees with itself ------------------------------------------------------------------------
@pytest.mark.parametrize("op", coll.OPS)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_the_numpy_compute_produces_the_reference_on_the_check_values(op, n):
    """Two homes of one meaning inside the row: what the simulated library computes from the data check's
    input must be what the verifier expects (a row whose two disagree fails here, not on a GPU)."""
    spec = coll.OP_TABLE[op]
    lay = coll.layout(op, 4 * 4 * 12, n)
    root = spec.root or 0
    if spec.compute is None:  # grouped send/recv: move the exchanges' chunks, then compare
        sends = [coll.check_values(np, r, 0, lay.send_count) for r in range(n)]
        recvs = [np.full(lay.recv_count, -7.0, np.float32) for _ in range(n)]
        for r in range(n):
            for peer, offset, count in spec.exchanges(r, n, lay, root)[0]:
                theirs = spec.exchanges(peer, n, lay, root)[1]
                into = next(o for p, o, c in theirs if p == r)
                recvs[peer][into:into + count] = sends[r][offset:offset + count]
    else:
        count = getattr(lay, spec.nccl.count)
        outs = spec.compute([coll.check_values(np, r, 0, lay.send_count) for r in range(n)], count, root)
        recvs = [np.full(lay.recv_count, -7.0, np.float32) if o is None else o for o in outs]
    for r in range(n):
        want = spec.reference(np, r, n, lay, root)
        if want is not None:
            assert np.array_equal(recvs[r][:lay.recv_count], want), (op, n, r)


def test_library_calls_name_a_function_of_the_library_and_take_what_the_op_needs():
    for spec in coll.TABLE:
        assert (spec.nccl is None) == (spec.compute is None) == (spec.nccl_func is None) == (spec.pattern == "p2p")
        assert (spec.exchanges_of is None) != spec.grouped
        for call in (spec.nccl, spec.rccl):
            if call is None:
                continue
            assert call.function.startswith("nccl") and call.count in ("send_count", "recv_count")
            assert ("redop" in call.args) == (spec.redop is not None), spec.name
            assert ("root" in call.args) == (spec.root is not None), spec.name


def test_every_spelling_names_one_operation_and_bad_names_are_one_clear_error():
    seen: dict[str, str] = {}
    for spec in coll.TABLE:
        for spelling in (spec.name, *spec.aliases):
            assert seen.setdefault(spelling, spec.name) == spec.name
            assert coll.collective(spelling.upper()) is spec
        assert coll.op_of_program(f"/x/{coll.program_of(spec.name)}") == spec.name
    with pytest.raises(UserError, match="unknown collective"):
        coll.collective("allreduce; rm -rf /")


# ---- one more row is enough --------------------------------------------------------------------------------
def _with_fake_op(monkeypatch: pytest.MonkeyPatch) -> coll.CollectiveOp:
    """A variant row: a reduce to root 1 (``reduce1``), added to the table and nowhere else."""
    base = coll.OP_TABLE["reduce"]
    fake = dataclasses.replace(base, name="reduce1", aliases=("reduce_to_one",), root=1, program="reduce1",
                               tool_root=1,
                               reference=lambda xp, r, n, lay, root: base.reference(xp, r, n, lay, root))
    table = (*coll.TABLE, fake)
    op_table = {op.name: op for op in table}
    monkeypatch.setattr(coll, "TABLE", table)
    monkeypatch.setattr(coll, "OPS", tuple(op_table))
    # OP_TABLE is one dict shared by every reader: the row is added to it, as an edit of TABLE would
    monkeypatch.setitem(coll.OP_TABLE, "reduce1", fake)
    return fake


def test_a_new_row_runs_on_the_simulated_backend_is_checked_and_round_trips_as_nccl_tests_text(monkeypatch):
    from linkscope.comm.launch import serial_job
    from linkscope.comm.nccl import make_peers, run_nccl
    from linkscope.comm.nccl_backend import SimNccl
    from linkscope.comm.records import nccl_record
    from linkscope.report import textformats
    from linkscope.results.peertools import nccltests
    from linkscope.topology.synthetic import synthetic_topology

    _with_fake_op(monkeypatch)
    be = SimNccl(synthetic_topology("nvswitch:4"))
    peers = make_peers(serial_job(), be, [0, 1, 2, 3])
    result = run_nccl(serial_job(), be, peers, "reduce1", [4096, 1 << 20], iters=2, warmup=1, inplace=True)
    assert result is not None and result.wrong_total == 0
    assert all(r.time_us > 0 and r.wrong == 0 for r in result.rows)
    # the data really went to root 1: rank 1's buffer holds the sum, rank 0's does not
    spec = coll.OP_TABLE["reduce1"]
    sends = [coll.check_values(np, r, 0, 8) for r in range(3)]
    outs = spec.compute(sends, 8, spec.root)
    assert outs[0] is None and outs[2] is None and np.array_equal(outs[1], sum(sends))
    # written as nccl-tests text (its program, its root column) and read back as the same operation
    text = textformats.nccl_tests_text(nccl_record(result, {}, {}))
    assert "linkscope_reduce1 " in text
    row = next(line.split() for line in text.splitlines() if line.strip().startswith("4096 "))
    assert row[3:5] == ["sum", "1"]
    run = nccltests.parse_text(text, "out.txt")
    assert {m.method for m in run.measurements} == {"nccl.reduce1"}


def test_a_new_row_is_predicted_and_written_and_read_as_nccl_tests(monkeypatch):
    from linkscope.model.collectives import CollectiveModel
    from linkscope.results.peertools import nccltests
    from linkscope.topology.synthetic import synthetic_topology

    _with_fake_op(monkeypatch)
    model = CollectiveModel.of(synthetic_topology("nvswitch:4"))
    mine = model.predict("reduce1", [0, 1, 2, 3], 1 << 24)
    theirs = model.predict("reduce", [0, 1, 2, 3], 1 << 24)
    assert mine.time_us == pytest.approx(theirs.time_us) and mine.chosen.algorithm == "ring"
    assert coll.op_of_program("build/reduce1_perf") == "reduce1"
    assert nccltests.op_of_program("reduce1_perf") == "reduce1"


def test_the_real_backend_calls_each_library_function_with_nccl_h_argument_order():
    """CupyNccl.bind builds each call from the descriptor: CuPy's method and nccl.h's argument order
    (send, recv, count, datatype[, op][, root], stream; the communicator is the method's object)."""
    from types import SimpleNamespace

    from linkscope.comm.nccl_backend import CupyNccl, Peer

    seen = []

    class Comm:
        def __getattr__(self, name):
            return lambda *a: seen.append((name, a))

    be = CupyNccl(cp=SimpleNamespace(), nccl=SimpleNamespace(NCCL_FLOAT32=7, NCCL_SUM=3), runtime=SimpleNamespace())
    p = Peer(0, 0, Comm(), SimpleNamespace(ptr=99))
    s, r = SimpleNamespace(data=SimpleNamespace(ptr=1)), SimpleNamespace(data=SimpleNamespace(ptr=2))
    for op in ("allgather", "reduce_scatter", "reduce"):
        fn, args = be.bind(op, (p, s, r, 5, None))
        fn(*args)
    assert seen == [("allGather", (1, 2, 5, 7, 99)), ("reduceScatter", (1, 2, 5, 7, 3, 99)),
                    ("reduce", (1, 2, 5, 7, 3, 0, 99))]
    with pytest.raises(ValueError, match="no NCCL call"):
        be.bind("sendrecv", (p, s, r, 5, None))  # grouped send/recv: no library call of its own
    import linkscope.comm.nccl_backend as nb

    original = nb._nccl_library
    try:
        nb._nccl_library = lambda: SimpleNamespace()  # a library without NCCL 2.28's ncclAlltoAll
        with pytest.raises(ValueError, match="the NCCL library loaded has no ncclAlltoAll"):
            be.bind("alltoall", (p, s, r, 5, None))
        assert not be.has_function("ncclAlltoAll")
    finally:
        nb._nccl_library = original


@pytest.mark.parametrize(("root", "busbw", "op"), [("0", "300.00", "broadcast"), ("0", "225.00", "gather"),
                                                  ("-1", "450.00", "allreduce"), ("-1", "225.00", "allgather")])
def test_an_unnamed_nccl_tests_table_is_told_by_its_columns_and_bus_bandwidth_factor(root, busbw, op):
    """No program line, no telling file name: redop and root narrow the operations (the descriptor's
    columns), busbw / algbw picks among them by their factors (4 ranks: 1, 3/4, 3/2)."""
    from linkscope.results.peertools import nccltests

    redop = "sum" if op == "allreduce" else "none"
    ranks = [f"#  Rank {r:2d} Group  0 Pid   1234 on       node device {r:2d} [0000:19:00] NVIDIA H100 80GB HBM3"
             for r in range(4)]
    text = "\n".join([
        "# nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809", "#", "# Using devices", *ranks, "#",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
        f"   536870912     134217728     float    {redop:>4}      {root:>2}   1789.6  300.00  {busbw}       0"
        f"   1789.6  300.00  {busbw}       0",
    ]) + "\n"
    run = nccltests.parse_text(text, "run.txt")
    assert {m.method for m in run.measurements} == {f"nccl.{op}"}


@pytest.mark.parametrize(("op", "count"), [("allgather", 256), ("reduce_scatter", 256), ("alltoall", 256),
                                           ("allreduce", 512), ("sendrecv", 512)])
def test_the_count_column_is_the_library_calls_count_as_nccl_tests_prints_it(op, count):
    """nccl-tests 2.19.6 on 2 GPUs at 2048 B (docs/runs/h200x2-2026-11-28b/call2/nccl/*_g0_r1.txt) prints 256 for
    all_gather, reduce_scatter and alltoall (the count each call takes: S/n per rank or per peer) and 512 for
    all_reduce and sendrecv; linkscope's nccl-tests layout printed 512 for all_gather."""
    from linkscope.collectives import OP_TABLE, layout

    assert OP_TABLE[op].reported_count(layout(op, 2048, 2)) == count


@pytest.mark.parametrize("op", [op.name for op in coll.TABLE if op.grouped])
def test_shift_invariant_ops_send_the_same_offsets_from_every_rank(op):
    """``peer_offsets`` (rank 0's sends as offsets) is every rank's exchange, shifted, where an operation says it
    is shift-invariant; a rooted one (gather: only the root receives) must not say so."""
    spec = coll.OP_TABLE[op]
    shifted_everywhere = True
    for n in range(1, 10):
        lay = coll.layout(op, 1 << 20, n)
        offsets = sorted((peer % n, count) for peer, _, count in spec.exchanges(0, n, lay)[0])
        for rank in range(n):
            mine = sorted(((peer - rank) % n, count) for peer, _, count in spec.exchanges(rank, n, lay)[0])
            shifted_everywhere &= mine == offsets
        if spec.shift_invariant:
            assert spec.peer_offsets(n, lay) == offsets
        else:
            assert spec.peer_offsets(n, lay) is None
    assert spec.shift_invariant == shifted_everywhere


def test_printed_rates_fix_the_rank_count_within_their_rounding():
    """#34: busbw / algbw is the op's factor of the run's rank count; two-decimal rates fix it exactly on
    a few hundred ranks (coreweave/nccl-tests README: 32, 96, 128 ranks) and to an interval on more."""
    from linkscope.collectives import ranks_of_printed_rates
    assert ranks_of_printed_rates("allreduce", [(76.31, 147.85), (82.45, 159.75)]) == (32, 32)
    assert ranks_of_printed_rates("allreduce", [(248.92, 493.94), (408.40, 810.41)]) == (128, 128)
    low, high = ranks_of_printed_rates("allreduce", [(203.01, 405.74), (202.53, 404.77)]) or (0, 0)
    assert low <= 1440 <= high and high - low < 200
    assert ranks_of_printed_rates("allgather", [(10.00, 8.75)]) == (8, 8)
    assert ranks_of_printed_rates("allreduce", [(5.0, 0.0)]) == (1, 1)  # one rank: nothing crosses a link
    # factor 1 says nothing; a ratio at the factor's limit (an old all_gather printing busbw = algbw) neither
    assert ranks_of_printed_rates("broadcast", [(10.0, 10.0)]) is None
    assert ranks_of_printed_rates("allgather", [(21.40, 21.40)]) is None
    assert ranks_of_printed_rates("allreduce", [(0.01, 0.02)]) is None  # too small to say anything
