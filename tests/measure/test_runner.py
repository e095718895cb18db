
import pytest
from fakes import FakeEngine

from linkscope.errors import ConfigError
from linkscope.measure.options import MeasureOptions
from linkscope.measure.runner import BenchSpec, run_bench, run_latency
from linkscope.patterns.plan import Transfer, TransferPlan
from linkscope.patterns.registry import get_pattern
from linkscope.results.io import from_dict, to_dict
from linkscope.results.schema import RunProvenance, Status
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:4")
MiB = 1024**2
NV_GB_PER_S = 18 * 26.562
FAST = MeasureOptions(warmup=1, min_reps=5, max_reps=20, time_budget_s=10.0)


def spec(pattern, methods=("ce",), direction="uni", gpus=None):
    return BenchSpec(get_pattern(pattern), tuple(methods), direction, gpus)


def test_matrix_entries_bandwidth_and_theoretical():
    record = run_bench(FakeEngine(TOPO), TOPO, spec("matrix", gpus=(0, 1, 2)), [64 * MiB], FAST)
    assert record.kind == "bench" and record.complete and record.provenance is RunProvenance.MEASURED
    ms = record.measurements
    assert len(ms) == 6 and {(m.src, m.dst) for m in ms} == {(a, b) for a in range(3) for b in range(3) if a != b}
    for m in ms:
        assert m.status is Status.OK and m.scope == "transfer" and m.moved_bytes == 64 * MiB
        assert m.median_gb_per_s == pytest.approx(0.9 * NV_GB_PER_S, rel=0.01)
        assert m.extra["theoretical_gb_per_s"] == pytest.approx(NV_GB_PER_S)
        assert m.verified is True and m.bandwidth.n == 5
    assert len({m.group for m in ms}) == 6
    assert record.options["engine"] == "fake" and record.options["sizes_bytes"] == [64 * MiB]
    assert from_dict(to_dict(record)).measurements == record.measurements


def test_bi_pair_total_counts_both_directions():
    record = run_bench(FakeEngine(TOPO), TOPO, spec("matrix", direction="bi", gpus=(0, 1)), [64 * MiB], FAST)
    flows = [m for m in record.measurements if m.scope == "transfer"]
    (total,) = [m for m in record.measurements if m.scope == "total"]
    assert [(m.src, m.dst) for m in flows] == [(0, 1), (1, 0)]
    assert (total.src, total.dst, total.direction) == (0, 1, "bi")
    assert total.moved_bytes == 2 * 64 * MiB
    assert total.median_gb_per_s == pytest.approx(2 * 0.9 * NV_GB_PER_S, rel=0.01)
    assert total.extra["theoretical_gb_per_s"] == pytest.approx(2 * NV_GB_PER_S)


def test_all_to_one_total_per_receiver_uses_group_time():
    record = run_bench(FakeEngine(TOPO), TOPO, spec("all-to-one"), [16 * MiB], FAST)
    totals = [m for m in record.measurements if m.scope == "total"]
    assert [(m.src, m.dst) for m in totals] == [("*", 0), ("*", 1), ("*", 2), ("*", 3)]
    flow = next(m for m in record.measurements if m.scope == "transfer")
    # three flows share the receiver: each gets a third, the total is the receiver's share
    assert flow.median_gb_per_s == pytest.approx(0.9 * NV_GB_PER_S / 3, rel=0.01)
    assert totals[0].median_gb_per_s == pytest.approx(0.9 * NV_GB_PER_S, rel=0.01)
    assert totals[0].moved_bytes == 3 * 16 * MiB
    assert totals[0].extra["theoretical_gb_per_s"] == pytest.approx(NV_GB_PER_S)  # capped by the receiver's links


def test_one_to_all_and_ring_aggregates():
    record = run_bench(FakeEngine(TOPO), TOPO, spec("one-to-all", gpus=(0, 1, 2)), [MiB], FAST)
    assert [(m.src, m.dst) for m in record.measurements if m.scope == "total"] == [(0, "*"), (1, "*"), (2, "*")]
    record = run_bench(FakeEngine(TOPO), TOPO, spec("ring"), [MiB], FAST)
    (total,) = [m for m in record.measurements if m.scope == "total"]
    assert (total.src, total.dst, total.moved_bytes) == ("*", "*", 4 * MiB)
    assert "theoretical_gb_per_s" not in total.extra


def test_host_reference_uses_nearest_cpu_route():
    record = run_bench(FakeEngine(TOPO), TOPO, spec("host", methods=("h2d", "d2h"), gpus=(0,)), [MiB], FAST)
    assert [(m.method, m.src, m.dst) for m in record.measurements] == [("h2d", "host", 0), ("d2h", 0, "host")]
    assert record.measurements[0].extra["theoretical_gb_per_s"] == pytest.approx(63.015)  # PCIe Gen5 x16


def test_pattern_waivers_and_missing_methods_become_waived_entries():
    engine = FakeEngine(TOPO, methods=[m for m in FakeEngine(TOPO).methods if m.key != "sm-push"])
    record = run_bench(engine, TOPO, spec("matrix", methods=("ce", "sm-push", "h2d"), gpus=(0, 1)), [MiB], FAST)
    by_method = {m.method: m for m in record.measurements if m.status is Status.WAIVED}
    assert "not offered by the fake engine" in by_method["sm-push"].reason
    assert "host/device-local reference method" in by_method["h2d"].reason
    assert (by_method["h2d"].src, by_method["h2d"].dst) == ("*", "*")
    assert by_method["h2d"].bandwidth is None
    one = run_bench(FakeEngine(TOPO), TOPO, spec("ring", gpus=(2,)), [MiB], FAST)
    assert one.measurements[0].status is Status.WAIVED and "at least 2 GPUs" in one.measurements[0].reason
    assert not [r for r in engine.runs if r[0].method != "ce"]  # nothing ran for waived methods


def test_engine_waiver_and_peer_hint():
    topo = TOPO.replace(model_params={"no_peer_access": [[0, 2]]})
    engine = FakeEngine(topo, waive=lambda plan: "engine says no" if (0, 1) in [(t.src, t.dst) for t in plan.transfers] else None)
    record = run_bench(engine, topo, spec("matrix", gpus=(0, 1, 2)), [MiB], FAST)
    status = {(m.src, m.dst): (m.status, m.reason) for m in record.measurements}
    assert status[(0, 1)] == (Status.WAIVED, "engine says no")
    assert status[(0, 2)][0] is Status.WAIVED and "no peer access" in status[(0, 2)][1]
    assert status[(1, 2)][0] is Status.OK
    assert len(engine.runs) == 3  # 0->1 (engine) and 0<->2 (hint) did not run


def test_engine_exception_becomes_error_and_run_goes_on():
    engine = FakeEngine(TOPO, fail_on=lambda plan: plan.label == "0->1")
    record = run_bench(engine, TOPO, spec("matrix", gpus=(0, 1, 2)), [MiB], FAST)
    errors = record.errors
    assert [(m.src, m.dst) for m in errors] == [(0, 1)]
    assert errors[0].reason == "RuntimeError: fake failure on 0->1" and errors[0].bandwidth is None
    assert sum(m.status is Status.OK for m in record.measurements) == 5


def test_failed_data_check_is_an_error():
    engine = FakeEngine(TOPO, bad_data=lambda plan: plan.label == "1->0")
    record = run_bench(engine, TOPO, spec("matrix", gpus=(0, 1)), [MiB], FAST)
    bad = record.errors[0]
    assert (bad.src, bad.dst, bad.verified) == (1, 0, False) and "data check failed" in bad.reason
    no_verify = run_bench(FakeEngine(TOPO), TOPO, spec("matrix", gpus=(0, 1)), [MiB], MeasureOptions(verify=False, min_reps=3))
    assert all(m.verified is None for m in no_verify.measurements)


def test_free_memory_refusal_before_anything_runs():
    engine = FakeEngine(TOPO, free_bytes=2 * 1024**3)
    with pytest.raises(ConfigError) as exc:
        run_bench(engine, TOPO, spec("all-to-one"), [1024**3], FAST)
    assert str(exc.value) == "1 GiB × 3 buffers does not fit in GPU 0's free memory (2 GiB free)"
    assert engine.runs == []
    with pytest.raises(ConfigError, match="1 GiB × 2 buffers does not fit in GPU 0"):
        run_bench(FakeEngine(TOPO, free_bytes=1024**3), TOPO, spec("local", methods=("local",)), [1024**3], FAST)


def test_batches_stop_at_ci_target_max_reps_or_time_budget():
    noisy = FakeEngine(TOPO, jitter=0.2)
    record = run_bench(noisy, TOPO, spec("matrix", gpus=(0, 1)), [MiB], MeasureOptions(min_reps=5, max_reps=12, time_budget_s=100))
    assert record.measurements[0].bandwidth.n == 12  # noisy: grows to max_reps
    assert [r[1] for r in noisy.runs[:3]] == [5, 5, 2]
    assert noisy.runs[0][2:] == (3, True) and noisy.runs[1][2:] == (1, False)  # warm-up + check only first
    ticks = iter(range(1000))
    slow_clock = lambda: float(next(ticks))  # noqa: E731 - each call advances one second
    limited = FakeEngine(TOPO, jitter=0.2)
    record = run_bench(limited, TOPO, spec("matrix", gpus=(0, 1)), [MiB], MeasureOptions(min_reps=5, max_reps=50, time_budget_s=0.5),
                       clock=slow_clock)
    assert record.measurements[0].bandwidth.n == 5  # budget spent after the first batch
    tight = FakeEngine(TOPO)
    record = run_bench(tight, TOPO, spec("matrix", gpus=(0, 1)), [MiB], MeasureOptions(min_reps=5, max_reps=50, time_budget_s=100))
    assert record.measurements[0].bandwidth.n == 5 and record.measurements[0].bandwidth.cv < 0.01


def test_keyboard_interrupt_hands_over_partial_record():
    engine = FakeEngine(TOPO, interrupt_after_runs=3)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        run_bench(engine, TOPO, spec("matrix"), [MiB], FAST, on_partial=seen.append)
    assert [len(p.measurements) for p in seen] == [1, 2, 3, 3]  # a checkpoint per job, then the interrupt's
    partial = seen[-1]
    assert all(p.complete is False for p in seen)
    assert all(m.status is Status.OK for m in partial.measurements)


def test_progress_callback_counts_every_plan():
    calls = []
    run_bench(FakeEngine(TOPO), TOPO, spec("matrix", gpus=(0, 1)), [MiB, 2 * MiB], FAST, progress=lambda d, t, l: calls.append((d, t)))
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


def test_explicit_plans_are_resized_per_size():
    plan = TransferPlan("sweep", "uni", "ce", (Transfer(0, 1, 8),), "none", "0->1")
    record = run_bench(FakeEngine(TOPO), TOPO, [plan], [4096, MiB], FAST)
    assert [(m.pattern, m.size_bytes) for m in record.measurements] == [("sweep", 4096), ("sweep", MiB)]


def test_simulated_engine_marks_provenance():
    record = run_bench(FakeEngine(TOPO, provenance="simulated"), TOPO, spec("matrix", gpus=(0, 1)), [MiB], FAST)
    assert record.provenance is RunProvenance.SIMULATED
    assert all(m.provenance is RunProvenance.SIMULATED for m in record.measurements)


def test_latency_in_microseconds_with_waivers():
    engine = FakeEngine(TOPO, latency_kinds=("remote-read", "copy"))
    record = run_latency(engine, ["remote-read", "flag-pingpong", "copy"], [(0, 1)], MeasureOptions(latency_reps=10),
                         topology=TOPO, method="ce", size_bytes=8)
    rr, flag, copy = record.measurements
    assert (rr.method, rr.pattern, rr.status) == ("remote-read", "latency", Status.OK)
    assert rr.latency.n == 10 and rr.latency_us == pytest.approx(0.808) and rr.bandwidth is None
    assert flag.status is Status.WAIVED and "flag-pingpong" in flag.reason
    assert (copy.method, copy.size_bytes, copy.extra["latency_kind"]) == ("ce", 8, "copy")
    assert record.kind == "latency"


def test_latency_default_pairs_and_interrupt():
    record = run_latency(FakeEngine(TOPO), "remote-read", None, MeasureOptions(latency_reps=3), topology=TOPO)
    assert len(record.measurements) == 12

    class Interrupting(FakeEngine):
        def latency_us(self, *args, **kwargs):
            if len(self.latency_calls) >= 2:
                raise KeyboardInterrupt
            return super().latency_us(*args, **kwargs)

    seen = []
    with pytest.raises(KeyboardInterrupt):
        run_latency(Interrupting(TOPO), "remote-read", None, MeasureOptions(latency_reps=3), topology=TOPO, on_partial=seen.append)
    assert len(seen[-1].measurements) == 2 and not any(p.complete for p in seen)
