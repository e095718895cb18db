"""run_watch end to end on a fake NVML and a fake process; the CLI on a real subprocess."""
from __future__ import annotations

import json
import sys

import pytest

from linkscope.cli import main
from linkscope.counters.watch import (
    EXIT_EXPECT_FAILED,
    CommandNotFound,
    WatchOptions,
    resolve_command,
    run_watch,
    timeline_csv,
    to_dict,
)
from linkscope.errors import UserError
from tests.counters.fake_nvml import FakeClock, FakeGpu, FakeNVML

GiB = 1024**3


class FakeProc:
    def __init__(self, action, code=0):
        self.action, self.code = action, code

    def wait(self, timeout=None):
        self.action()
        return self.code

    def kill(self):
        pass


def _run(nv, action, code=0, **opts):
    clock = FakeClock()
    opts.setdefault("command", ("copy",))
    opts.setdefault("settle_s", 0.0)

    def popen(argv):
        def act():
            clock.advance(0.5)
            action()
        return FakeProc(act, code)

    return run_watch(WatchOptions(**opts), nv, clock=clock, sleep=lambda s: None, popen=popen,
                     now_utc=lambda: "2026-11-22T00:00:00+00:00")


def _copy_0_to_1(nv, size=GiB, links=18):
    def action():
        for link in range(links):  # striped over the links, like a CE copy over NVSwitch
            nv.nvlink(0, link, tx_bytes=size // links)
            nv.nvlink(1, link, rx_bytes=size // links)
        nv.pcie(0, tx_bytes=1_000_000, rx_bytes=2_000_000)
    return action


def test_copy_reports_nvlink_tx_on_sender_and_rx_on_receiver():
    nv = FakeNVML([FakeGpu(), FakeGpu()])
    result = _run(nv, _copy_0_to_1(nv), expect="nvlink")
    g0, g1 = result.gpus
    assert g0.nvlink_tx.bytes == pytest.approx(GiB, rel=1e-4) and g0.nvlink_rx.bytes == 0
    assert g1.nvlink_rx.bytes == pytest.approx(GiB, rel=1e-4) and g1.nvlink_tx.bytes == 0
    assert g0.pcie_tx.bytes == 1_000_000 and g0.pcie_rx.bytes == 2_000_000
    assert g0.verdict.kind == "nvlink" and g1.verdict.kind == "nvlink"
    assert g0.verdict.message.startswith("NVLink carried 1.07 GB, PCIe 3 MB: traffic went over NVLink")
    assert result.expect.passed and result.final_exit_code == 0
    assert sum(1 for link, tx, rx in g0.nvlink_links if tx.bytes) == 18
    assert g0.nvlink_tx.peak_gb_per_s == pytest.approx(GiB / 0.5 / 1e9, rel=1e-3)
    data = to_dict(result)
    json.dumps(data, allow_nan=False)
    assert data["gpus"][0]["nvlink"]["tx"]["bytes"] == g0.nvlink_tx.bytes
    assert data["gpus"][1]["verdict"]["kind"] == "nvlink"
    csv_text = timeline_csv(result)
    assert csv_text.splitlines()[0].startswith("t_start_s,t_end_s,gpu,bus,link,direction,bytes")
    assert len(csv_text.splitlines()) == 1 + len(result.timeline)


def test_expect_fails_when_traffic_took_pcie_and_command_code_wins():
    nv = FakeNVML([FakeGpu(), FakeGpu()])

    def over_pcie():
        nv.pcie(0, tx_bytes=GiB)
        nv.pcie(1, rx_bytes=GiB)

    result = _run(nv, over_pcie, expect="nvlink")
    assert not result.expect.passed and result.final_exit_code == EXIT_EXPECT_FAILED
    nv2 = FakeNVML([FakeGpu(), FakeGpu()])
    result = _run(nv2, lambda: None, code=5, expect="nvlink")
    assert result.final_exit_code == 5  # the command's own failure is returned as is


def test_unsupported_counters_are_reported_not_zeroed():
    nv = FakeNVML([FakeGpu(nvlink_supported=False, pcie_counters=False, pcie_throughput=False)])
    result = _run(nv, lambda: None, expect="nvlink")
    g = result.gpus[0]
    assert g.nvlink_tx is None and g.pcie_tx is None
    assert g.verdict.kind == "unknown" and g.verdict.nvlink_bytes is None
    data = to_dict(result)["gpus"][0]
    assert data["nvlink"]["supported"] is False and data["nvlink"]["tx"] is None
    assert data["pcie"]["supported"] is False and "NOT_SUPPORTED" in data["pcie"]["reason"]
    assert result.final_exit_code == EXIT_EXPECT_FAILED


def test_one_unsupported_link_keeps_the_total_incomplete():
    from linkscope.counters.nvml import FI_NVLINK_DATA_TX_KIB

    nv = FakeNVML([FakeGpu(links=2, refuse={(FI_NVLINK_DATA_TX_KIB, 1)})])
    result = _run(nv, lambda: nv.nvlink(0, 0, tx_bytes=GiB))
    g = result.gpus[0]
    assert g.nvlink_tx.bytes == GiB and not g.nvlink_tx.complete
    link1 = dict((link, tx) for link, tx, rx in g.nvlink_links)[1]
    assert link1.bytes is None and "unsupported: NOT_SUPPORTED" in link1.notes


def test_counter_wrap_during_command():
    nv = FakeNVML([FakeGpu(links=1, modulus=2**32)])
    nv.set_raw(0, 138, 0, 2**32 - 10)  # 10 KiB before the wrap
    result = _run(nv, lambda: nv.nvlink(0, 0, tx_bytes=1024 * 1000))
    assert result.gpus[0].nvlink_tx.bytes == 1024 * 1000
    assert result.gpus[0].nvlink_tx.wraps == 1


def test_signal_exit_maps_to_128_plus_n():
    nv = FakeNVML([FakeGpu(links=1)])
    assert _run(nv, lambda: None, code=-9).final_exit_code == 137


def test_gpu_that_does_not_exist():
    nv = FakeNVML([FakeGpu(), FakeGpu()])
    with pytest.raises(UserError, match="GPU 3 does not exist"):
        _run(nv, lambda: None, gpus=(0, 3))


def test_bad_options():
    with pytest.raises(UserError, match="unknown --expect value 'pcie'"):
        WatchOptions(command=("x",), expect="pcie")


def test_resolve_command(tmp_path):
    with pytest.raises(CommandNotFound) as info:
        resolve_command(["no-such-command-linkscope"])
    assert info.value.exit_code == 127 and str(info.value) == "command not found: no-such-command-linkscope"
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(CommandNotFound) as info:
        resolve_command([str(script)])
    assert info.value.exit_code == 126
    assert resolve_command([sys.executable, "-V"])[0] == sys.executable


# ---- CLI -----------------------------------------------------------------------------------

@pytest.fixture()
def fake_nvml(monkeypatch):
    nv = FakeNVML([FakeGpu(links=4), FakeGpu(links=4)])
    monkeypatch.setattr("linkscope.counters.nvml.open_nvml", lambda: nv)
    return nv


def test_cli_passes_output_and_exit_code_through(fake_nvml, capfd, tmp_path):
    out_json, out_csv = tmp_path / "w.json", tmp_path / "w.csv"
    code = main(["watch", "--interval", "20ms", "--settle", "0", "--json", str(out_json), "--csv", str(out_csv),
                 "--", sys.executable, "-c", "import sys; print('hello from the command'); sys.exit(7)"])
    captured = capfd.readouterr()
    assert code == 7
    assert captured.out.strip() == "hello from the command"  # stdout belongs to the command
    assert "GPU 0: NVLink carried 0 B, PCIe 0 B: no significant traffic" in captured.err
    assert captured.err.count(f"wrote {out_json}") == 1 and captured.err.count(f"wrote {out_csv}") == 1, captured.err
    data = json.loads(out_json.read_text())
    assert data["format"] == "linkscope.watch" and data["exit_code"] == 7 and len(data["gpus"]) == 2
    assert out_csv.read_text().startswith("t_start_s,")


def test_cli_expect_nvlink_fails_with_3_when_nothing_moved(fake_nvml, capfd):
    code = main(["watch", "--expect", "nvlink", "--settle", "0", "--", sys.executable, "-c", "pass"])
    assert code == EXIT_EXPECT_FAILED
    assert "--expect nvlink: FAILED: no significant traffic" in capfd.readouterr().err


def test_cli_command_not_found_is_one_line_127(fake_nvml, capfd):
    code = main(["watch", "--", "no-such-command-linkscope", "arg"])
    err = capfd.readouterr().err
    assert code == 127
    assert err.strip() == "linkscope: error: command not found: no-such-command-linkscope"


def test_cli_bad_gpu_is_one_line_exit_1(fake_nvml, capfd):
    code = main(["watch", "--gpus", "0,3", "--", sys.executable, "-c", "pass"])
    err = capfd.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "GPU 3 does not exist (NVML sees 2 GPU(s): valid indices 0..1)" in err


def test_cli_without_nvml(monkeypatch, capfd):
    import builtins

    real_import = builtins.__import__

    def no_pynvml(name, *args, **kwargs):
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    code = main(["watch", "--", sys.executable, "-c", "pass"])
    err = capfd.readouterr().err
    assert code == 1
    assert "counters need an NVIDIA driver (NVML not found: No module named 'pynvml')" in err


class _WithLinkHealth(FakeNVML):
    """The counter fake plus ``link_health`` read by the real reader from a pynvml-shaped double."""

    def __init__(self, gpus, double):
        super().__init__(gpus)
        self.double = double

    def link_health(self, index):
        import pynvml

        from linkscope.discovery.nvml import read_link_health

        return read_link_health(self.double, index, pynvml.NVMLError)


def test_watch_names_the_link_whose_errors_grew_during_the_command():
    import pynvml

    from tests.discovery import discovery_fakes as dfakes

    double = dfakes.FakeNVML(gpus=[dfakes.FakeGpu(bus_id=f"00000000:{b:02x}:00.0", pcie=(5, 16),
                                                  nvlinks=[("00000000:2a:00.0", 0, 6, 26562)] * 18) for b in (0x18, 0x2A)])
    nv = _WithLinkHealth([FakeGpu(), FakeGpu()], double)
    copy = _copy_0_to_1(nv)

    def action():
        copy()
        double.gpus[0].nvlink_errors[(4, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT)] = 2

    result = _run(nv, action)
    assert result.link_issues == ["GPU0 NVLink 4 error counters grew during 'the command': CRC (flit) +2 (0 -> 2)."]
    data = to_dict(result)
    assert data["link_errors"]["issues"][0]["link"] == 4
    json.dumps(data, allow_nan=False)
    quiet = _run(nv, _copy_0_to_1(nv))
    assert quiet.link_issues == [] and quiet.link_errors["after"]["gpus"]["1"]["nvlink"]["active_count"] == 18


def _run_with_background(nv, action, pcie_bytes_per_s, gpus, **opts):
    """Like _run, but time passes while watch sleeps, and every GPU's PCIe counters tick at the
    background rate for every second that passes (driver and NVML chatter, busy or idle)."""
    clock = FakeClock()

    def advance(seconds):
        clock.advance(seconds)
        for g in range(gpus):
            nv.pcie(g, tx_bytes=int(pcie_bytes_per_s * seconds * 0.55), rx_bytes=int(pcie_bytes_per_s * seconds * 0.45))

    def popen(argv):
        def act():
            for _ in range(40):  # a 4 s command, 100 ms at a time
                advance(0.1)
            action()
        return FakeProc(act)

    opts.setdefault("settle_s", 0.0)
    return run_watch(WatchOptions(command=("copy",), **opts), nv, clock=clock, sleep=advance, popen=popen,
                     now_utc=lambda: "2026-11-28T00:00:00+00:00")


def _copy_0_to_3(nv, size=4 * GiB, links=18):
    def action():
        for link in range(links):
            nv.nvlink(0, link, tx_bytes=size // links)
            nv.nvlink(3, link, rx_bytes=size // links)
    return action


def test_idle_gpus_background_pcie_is_judged_away_by_the_idle_baseline():
    """The recorded 4 x H200 watch (shared/recordings/h200x4-2026-11-28/linkscope/watch.txt): a 4 GiB
    copy GPU0 -> GPU3, while every GPU, busy or idle, shows ~28 MB/s of PCIe chatter (111-117 MB in
    the 4 s). Without a baseline the idle GPUs 1 and 2 read "pcie" and --expect nvlink failed."""
    nv = FakeNVML([FakeGpu() for _ in range(4)])
    old = _run_with_background(nv, _copy_0_to_3(nv), 28e6, 4, expect="nvlink", baseline_s=0.0)
    assert [g.verdict.kind for g in old.gpus] == ["nvlink", "pcie", "pcie", "nvlink"]
    assert old.final_exit_code == EXIT_EXPECT_FAILED
    nv = FakeNVML([FakeGpu() for _ in range(4)])
    result = _run_with_background(nv, _copy_0_to_3(nv), 28e6, 4, expect="nvlink", baseline_s=1.0)
    assert [g.verdict.kind for g in result.gpus] == ["nvlink", "idle", "idle", "nvlink"]
    assert result.expect.passed and result.final_exit_code == 0
    assert all(b.pcie_bytes_per_s == pytest.approx(28e6, rel=0.01) for b in result.baseline)
    assert "idle background over the same time: PCIe 11" in result.gpus[1].verdict.message
    assert to_dict(result)["baseline"][0]["window_s"] == pytest.approx(1.0)


def test_baseline_still_fails_a_copy_that_went_over_pcie():
    """Peer access off: the copy is staged through host memory, 4 GiB over each GPU's PCIe link."""
    nv = FakeNVML([FakeGpu() for _ in range(4)])

    def staged():
        nv.pcie(0, tx_bytes=4 * GiB)
        nv.pcie(3, rx_bytes=4 * GiB)

    result = _run_with_background(nv, staged, 28e6, 4, expect="nvlink", baseline_s=1.0)
    assert [g.verdict.kind for g in result.gpus] == ["pcie", "idle", "idle", "pcie"]
    assert result.expect.passed is False and result.final_exit_code == EXIT_EXPECT_FAILED


def test_baseline_option_is_validated():
    with pytest.raises(UserError):
        WatchOptions(command=("x",), baseline_s=-1)
