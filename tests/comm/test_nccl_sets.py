"""bench nccl on several sets of communicators (--comm-sets): a small eager op's time is drawn when a set is made
(2 x H200: ~13 or ~19 us, docs/runs/h200x2-2026-11-28f), so the run can time several sets and report the median set."""
import json

import pytest

from linkscope.cli import main
from linkscope.comm.launch import serial_job
from linkscope.comm.nccl import make_peers, merge_sets, run_nccl, run_nccl_sets
from linkscope.comm.records import nccl_record
from linkscope.measure.sweep import RunInterrupted, StopSignal

from .conftest import moody_backend, sim_backend


def _sets(be, sets, **kw):
    job = serial_job()
    return run_nccl_sets(job, be, lambda: make_peers(job, be, None), "allreduce", [8, 4096], sets=sets, iters=2,
                         warmup=1, **kw)


def test_each_set_is_made_and_destroyed_in_turn_and_the_median_set_is_reported():
    be = moody_backend(2, [1.0, 1.4, 1.0])
    result = _sets(be, 3)
    assert be.sets == 3 and be.destroyed == 3
    for row in result.rows:
        fast, slow, again = row.set_times_us
        assert slow == pytest.approx(1.4 * fast, rel=0.02) and again == pytest.approx(fast, rel=0.02)
        assert row.time_us == pytest.approx(sorted(row.set_times_us)[1])  # the median set, not the mean
        assert len(row.runs_time_us) == 3 and row.wrong == 0
        assert row.algbw_gb_per_s == pytest.approx(row.size_bytes / (row.time_us * 1e3))
    assert any("timed on 3 of 3 sets of communicators" in n for n in result.notes)
    assert any("differ by up to 1.40x" in n for n in result.notes)
    extra = nccl_record(result, {}, {}).measurements[0].extra
    assert extra["set_times_us"] == list(result.rows[0].set_times_us)


def test_one_set_is_the_plain_run():
    be, again = sim_backend(2), sim_backend(2)
    job = serial_job()
    one = _sets(be, 1)
    plain = run_nccl(job, again, make_peers(job, again, None), "allreduce", [8, 4096], iters=2, warmup=1)
    assert one == plain and all(not r.set_times_us for r in one.rows)
    assert not any("sets of communicators" in n for n in one.notes)
    assert merge_sets([plain], 1) is plain


def test_an_interrupted_set_keeps_the_finished_sets_and_its_own_finished_sizes():
    be = moody_backend(2, [1.0, 1.4])
    stop, seen = StopSignal(), []

    def checkpoint(part):
        seen.append({s: part.sets_of(s) for s in part.sizes()})
        if len(seen) == 3:  # set 1: 8, 4096; set 2: 8, then stop
            stop.request()

    with pytest.raises(RunInterrupted) as exc:
        _sets(be, 2, checkpoint=checkpoint, stop=stop)
    assert seen == [{8: 1}, {8: 1, 4096: 1}, {8: 2, 4096: 1}]
    partial = exc.value.partial
    assert partial.sets_of(8) == 2 and partial.sets_of(4096) == 1 and be.destroyed == 2
    assert any("timed on 2 of 2 sets" in n for n in partial.notes)


def test_cli_prints_each_size_once_when_every_set_has_timed_it(tmp_path, capsys):
    out = tmp_path / "sets.json"
    assert main(["bench", "nccl", "--backend", "sim", "--comm-sets", "3", "--sizes", "8,64,512", "--json",
                 str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["options"]["comm_sets"] == 3
    assert [len(m["extra"]["set_times_us"]) for m in rec["measurements"]] == [3, 3, 3]
    rows = [line for line in capsys.readouterr().out.splitlines() if line.strip() and not line.startswith("#")]
    assert [int(line.split()[0]) for line in rows] == [8, 64, 512]


def test_every_set_is_made_in_its_turn_after_the_runs_context(monkeypatch, tmp_path):
    """The first set was made before the run's context (vendor versions, NVML) and the others right before their
    turn; on 2 x H200 every process's first set then drew the slow eager mode (call 5 of
    docs/runs/h200x2-2026-11-28f). Now no set is made before the context, and each right before it is timed."""
    import linkscope.comm.bench as bench
    from linkscope.comm.nccl_backend import SimNccl

    order: list[str] = []
    real_context, real_init = bench.job_context, SimNccl.init_all
    monkeypatch.setattr(bench, "job_context", lambda *a, **k: (order.append("context"), real_context(*a, **k))[1])
    monkeypatch.setattr(SimNccl, "init_all", lambda self, d: (order.append("set"), real_init(self, d))[1])
    assert main(["bench", "nccl", "--backend", "sim", "--comm-sets", "2", "--sizes", "8", "--json",
                 str(tmp_path / "r.json")]) == 0
    assert order == ["context", "set", "set"]


def test_a_stop_before_any_size_keeps_the_runs_own_empty_result():
    be = moody_backend(2, [1.0])
    stop = StopSignal()
    stop.request()
    with pytest.raises(RunInterrupted) as exc:
        _sets(be, 3, stop=stop)
    partial = exc.value.partial
    assert partial.op == "allreduce" and partial.ranks == 2 and not partial.rows and be.destroyed == 1
