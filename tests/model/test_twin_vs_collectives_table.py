"""bench/twin_vs_collectives.py's rows: which recordings each row's reference comes from."""

from dataclasses import replace

from tests import benchscripts

tvc = benchscripts.load("twin_vs_collectives")


def test_an_outlier_row_takes_every_recorded_run_of_its_command_as_a_range():
    """Ring/LL 1 MiB: visit 1 recorded 68.06 us out of place, 26.60 in place (an outlier of its run); the
    reference is the range of that run and visit 4's two reruns (24.53, 20.61 us), the 68.06 kept, each
    run named. No other row of the table is an outlier of its run, so every other reference is one run."""
    cases = {c.name: c for c in tvc.measured_cases()}
    row = cases["2 x H100 allreduce 1 MiB, NCCL_ALGO=Ring NCCL_PROTO=LL"]
    assert (row.low, row.high) == (20.61, 68.06)
    for part in ("all_reduce_Ring_LL.txt: 68.06 us, an outlier", "all_reduce_Ring_LL_r1.txt: 24.53 us",
                 "all_reduce_Ring_LL_r2.txt: 20.61 us"):
        assert part in row.source
    assert tvc.evaluate(row).passed  # the twin (26.6 us) lies within the range
    assert [c.name for c in cases.values() if c.low != c.high] == [row.name]


def test_visits_11_13_rows_name_their_file_and_use_time_below_64_mib():
    """visits11_13_cases: visit 12's seven curves, visit 11's allreduce / alltoall at 1 GiB, visit 13's
    alltoall and forced Tree/LL, each row's source naming its fixture file; 1 and 4 MiB rows on time (25%
    target), 64 MiB and 1 GiB on busbw (10%); -G 10 rows predicted from a CUDA graph, the rest eager,
    NCCL_GRAPH_REGISTER=0 kept where the run set it."""
    cases = tvc.visits11_13_cases()
    assert len(cases) == 33
    for c in cases:
        assert (c.quantity == "time") == (c.size_bytes < 64 << 20)
        assert c.source.endswith(".txt") and f" visit{c.name[6:8]}/nccl/" in c.source
        assert (c.launch == "graph") == ("CUDA graph" in c.name)
        assert (c.env.get("NCCL_GRAPH_REGISTER") == "0") == ("NCCL_GRAPH_REGISTER=0" in c.name)
    rows = {r.name: r for r in map(tvc.evaluate, cases)}
    assert rows["visit 12: allgather 64 MiB, CUDA graph"].passed  # -17.0% before the Simple ring's loop structure
    assert all(r.passed for r in rows.values())  # alltoall 1 GiB -G 10: -18.8% before the p2p warp sharing


def test_four_h200_rows_fit_and_test_kept_apart():
    """h200x4_cases: the 4 x H200 recordings, every op eager (1 MiB, 64 MiB, 512 MiB) and -G 20 (1, 64 MiB),
    predicted on the node's own topo.json with one thread driving four GPUs. Three rows carry a fit and say
    so; on the others the done-when bar holds: >= 90% of the >= 64 MiB rows within 10%, and the 1 MiB rows
    within 25%, all of them (alltoall -G 20 1 MiB was +33%: its remote sends are LL, not registered, yet the
    registered send's fixed time was added for the copy to itself).
    Before the per-GPU host time, the registered p2p refit and the fan-out share, the twin missed alltoall
    64 MiB (+22% eager, +30% -G 20), sendrecv -G 20 64 MiB (-42%) and the eager 1 MiB rows (-42% to -61%)."""
    cases = tvc.h200x4_cases()
    assert len(cases) == 23 and sum(bool(c.fitted) for c in cases) == 3
    rows = {c.name: (c, tvc.evaluate(c)) for c in cases}
    tests = [(c, r) for c, r in rows.values() if not c.fitted]
    big = [r for c, r in tests if c.size_bytes >= 64 << 20]
    assert sum(r.passed for r in big) >= 0.9 * len(big)
    small = [r for c, r in tests if c.size_bytes < 64 << 20]
    assert all(r.passed for r in small)
    for name in ("4 x H200 alltoall 64 MiB, eager", "4 x H200 alltoall 64 MiB, CUDA graph",
                 "4 x H200 allreduce 1 MiB, eager", "4 x H200 allgather 1 MiB, eager", "4 x H200 alltoall 1 MiB, eager",
                 "4 x H200 sendrecv 1 MiB, eager", "4 x H200 allreduce 1 MiB, CUDA graph",
                 "4 x H200 alltoall 1 MiB, CUDA graph"):
        assert rows[name][1].passed, name
    assert all("(fit)" in c.name and "fitted to it:" in c.source for c in cases if c.fitted)


def test_the_bar_on_rows_not_used_for_any_fit():
    """Issue 35's done-when on every table's rows that no parameter was fitted to (fit rows are marked,
    ROW_FITS / H200X4_FITS): >= 90% within 10% at >= 64 MiB and >= 90% within 25% at 1 MiB."""
    cases = (list(tvc.CASES + tvc.PUBLIC_CASES + tvc.RCCL_CASES + tvc.MULTINODE_CASES + tvc.MULTINODE_RING_CASES)
             + tvc.mi300x_public_cases()
             + tvc.measured_cases() + tvc.visit4_cases() + tvc.visits11_13_cases() + tvc.h200x4_cases() + tvc.h200x2_cases())
    rows = [tvc.evaluate(c) for c in cases]
    big = [r for c, r in zip(cases, rows) if not c.fitted and c.size_bytes >= 64 << 20]
    one = [r for c, r in zip(cases, rows) if not c.fitted and c.size_bytes in tvc.ONE_MIB_BAR_BYTES]
    assert sum(r.passed for r in big) >= 0.9 * len(big) and sum(r.passed for r in one) >= 0.9 * len(one)
    assert sum(bool(c.fitted) for c in cases) >= 10
    assert "Rows not used for any fit" in tvc.held_out_summary(cases, rows)
    text = tvc.bars(cases, rows)  # the four bars of issue 35, each counted and judged
    assert text.count(": met\n") == 4 and "**missed**" not in text
    assert "8 x MI300X RCCL within 15% at >= 64 MiB (all): 3 of 3" in text and "CE all-to-all on 4 x H200" in text


def test_two_h200_rows_of_every_call_held_out_and_launched_as_they_ran():
    """h200x2_cases: the 2 x H200 nccl-tests outputs of 2026-11-28 (docs/runs, calls 1-4: 51 runs of every op,
    eager and -G 20, one process and mpirun per GPU), four sizes each, none fitted. A run under mpirun has one
    GPU per host thread: its eager rows take one GPU's channel tasks on the host, not two (mpi allgather
    512 KiB was +40% with both GPUs' host work on one thread). The bar holds on them: every >= 64 MiB row
    within 10%, >= 90% of the 512 KiB / 2 MiB rows within 25%."""
    cases = tvc.h200x2_cases()
    assert len(cases) == 51 * 4 and not any(c.fitted for c in cases)
    assert {c.op for c in cases} == {"allreduce", "allgather", "reduce_scatter", "alltoall", "sendrecv"}
    for c in cases:
        assert (c.gpus_per_thread == 1) == ("mpirun per GPU" in c.name) == ("/mpi_" in c.source)
        assert (c.launch == "eager") == (c.eager_host_us is not None) == ("_g0" in c.source)
    rows = [tvc.evaluate(c) for c in cases]
    big = [r for c, r in zip(cases, rows) if c.size_bytes >= 64 << 20]
    assert len(big) == 102 and all(r.passed for r in big)
    one = [r for c, r in zip(cases, rows) if c.size_bytes in tvc.ONE_MIB_BAR_BYTES]
    assert len(one) == 102 and sum(r.passed for r in one) >= 0.9 * len(one)
    # the table's outlier rule (out of place over 1.5 x in place): reduce_scatter 2 MiB in call 4 round 1 (35.59 us,
    # in place 18.72) takes the range of the command's five recorded runs; no other row is an outlier of its run
    ranged = [c for c in cases if c.low != c.high]
    assert [c.name for c in ranged] == ["2 x H200 reduce_scatter 2 MiB, eager, host 13.91 us, one process "
                                        "(call4 reduce_scatter_g0_r1.txt)"]
    assert (ranged[0].low, ranged[0].high) == (18.92, 35.59)
    assert ranged[0].source.count("the recorded runs of this command: ") == 1 and ranged[0].source.count(" us; ") == 4
    mpi = next(c for c in cases if c.name.startswith("2 x H200 allgather 512 KiB") and "mpi_all_gather_g0_r1" in c.name)
    assert tvc.evaluate(mpi).passed and not tvc.evaluate(replace(mpi, gpus_per_thread=None)).passed


def test_public_rows_name_their_thread_and_the_gpu_count_scaling_holds():
    """PUBLIC_CASES: single-node public figures of 2-8 GPUs, each with its URL. NVLS allreduce busbw grows with the
    GPU count (nccl#1455: 420, 440, 460, 480 GB/s on 5-8 H100) and the twin follows within 10%, as it does for the
    ring at 4 and 8 GPUs and the p4dn 8 x A100 row. The 2-GPU rows are not held to it here: the thread's prose
    gives 365-370 for 2 GPUs, which three recordings of 2 x H100 in this repository contradict (325-328 GB/s at
    1 GiB), and NVLS on 2 GPUs moves 1.5 x the ring's bytes per GPU (the figure is the ring's)."""
    cases = {c.name: c for c in tvc.PUBLIC_CASES}
    assert all(c.source.startswith("https://github.com/") for c in cases.values())
    rows = {name: tvc.evaluate(c) for name, c in cases.items()}
    nvls = [rows[f"8 x H100 SXM node, {n} GPUs, allreduce 4 GiB, NCCL_ALGO=NVLS"] for n in (5, 6, 7, 8)]
    assert [r.chosen for r in nvls] == ["nvls/Simple"] * 4 and all(r.passed for r in nvls)
    assert nvls[0].twin < nvls[1].twin < nvls[2].twin < nvls[3].twin
    for name in ("8 x H100 SXM node, 4 GPUs, allreduce 4 GiB, NCCL_ALGO=RING",
                 "8 x H100 SXM node, 8 GPUs, allreduce 4 GiB, NCCL_ALGO=RING",
                 "AWS p4dn.24xlarge (8 x A100 40GB, NVSwitch), allreduce 1 GiB"):
        assert rows[name].passed, name


def test_public_mi300x_row_from_its_fixture():
    """hpc-ai-envs#30 (8 x MI300X, rccl-tests, one process): its one row, 8 MiB 161.14 GB/s busbw, read from the
    fixture and held to 15% on the MI300X topology with RCCL's rings."""
    (case,) = tvc.mi300x_public_cases()
    assert (case.size_bytes, case.low, case.gpus) == (8 << 20, 161.14, tuple(range(8)))
    row = tvc.evaluate(case)
    assert row.passed and row.chosen == "ring/Simple"


def test_the_afternoon_h200_lease_is_held_out_with_forced_settings_given_to_the_twin():
    """h200x2b_cases: the 2 x H200 lease of 2026-11-28 12:26 UTC (docs/runs/h200x2-2026-11-28b/call1), run after the
    twin was built: every op eager and -G 20 at 1 MiB-1 GiB, allreduce with NCCL_ALGO / NCCL_PROTO forced. The
    forced runs give the twin the same setting (an LL run predicted as NCCL's own Simple choice would miss by 2x)."""
    cases = tvc.h200x2b_cases()
    assert not any(c.fitted for c in cases)
    ll = [c for c in cases if c.env.get("NCCL_PROTO") == "LL" and c.size_bytes >= 64 << 20]
    assert ll and all(tvc.evaluate(c).passed for c in ll)
    assert not any(tvc.evaluate(replace(c, env={k: v for k, v in c.env.items() if k != "NCCL_PROTO"})).passed for c in ll)
    rows = [tvc.evaluate(c) for c in cases]
    big = [r for c, r in zip(cases, rows) if c.size_bytes >= 64 << 20]
    assert len(big) >= 40 and sum(r.passed for r in big) >= 0.9 * len(big)
