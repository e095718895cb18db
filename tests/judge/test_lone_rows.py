"""A low number alone on its curve (the sizes below and above ok, the other placement at its size ok) is one timing
off its own run, not the machine: not judged, with the reason (judge/runs.py ``_lone_rows``)."""
import json
from pathlib import Path

from linkscope.cli import main

ROOT = Path(__file__).resolve().parents[2]
EAGER = ROOT / "tests/fixtures/nccl/h200x4-2026-11-28/all_reduce-eager.txt"
TOPO = ROOT / "tests/fixtures/recordings/h200x4-2026-11-28/linkscope/topo.json"


def _slowed(text: str, size: int, in_place: bool, factor: float = 3) -> str:
    """The row of ``size`` with one placement's time x ``factor`` (its algbw and busbw / factor), as a transient would
    leave it."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 13 and f[0] == str(size):
            at = 9 if in_place else 5
            f[at:at + 3] = [f"{float(f[at]) * factor:.2f}", f"{float(f[at + 1]) / factor:.2f}",
                            f"{float(f[at + 2]) / factor:.2f}"]
            line = " ".join(f)
        out.append(line)
    return "\n".join(out) + "\n"


def _verdicts(tmp_path: Path, text: str) -> dict[tuple[str, bool], str]:
    src, out = tmp_path / "all_reduce.txt", tmp_path / "check.json"
    src.write_text(text)
    main(["check", str(src), "--from", str(TOPO), "--json", str(out)])
    check = json.loads(out.read_text())
    return {(m["size_bytes"], bool(m["extra"].get("inplace"))): v
            for m, v in zip(check["measurements"], check["extra"]["check"]["verdicts"])}


def test_one_slow_column_at_one_size_is_not_judged_and_says_why(tmp_path):
    text = EAGER.read_text()
    assert _verdicts(tmp_path, text)[(64 << 20, True)]["verdict"] == "ok"
    lone = _verdicts(tmp_path, _slowed(text, 64 << 20, True))[(64 << 20, True)]
    assert lone["verdict"] == "not judged" and lone["cause_key"] == "lone-row"
    assert "the sizes below and above and the other placement at this size are ok" in lone["reason"]


def test_a_slowness_in_both_columns_or_at_two_sizes_stays_low(tmp_path):
    text = EAGER.read_text()
    both = _verdicts(tmp_path, _slowed(_slowed(text, 64 << 20, True), 64 << 20, False))
    assert both[(64 << 20, True)]["verdict"] == "low" and both[(64 << 20, False)]["verdict"] == "low"
    two = _verdicts(tmp_path, _slowed(_slowed(text, 64 << 20, True), 8 << 20, True))
    assert two[(64 << 20, True)]["verdict"] == "low" and two[(8 << 20, True)]["verdict"] == "low"


def test_a_transport_named_at_one_slow_size_among_ok_ones_is_no_cause(tmp_path):
    """The 2 x H100 run (Tree/LL, 1-4 MiB) whose 2 MiB out-of-place row took 142 us (the re-run: 29 us): its 14.7
    GB/s happened to sit near the host-memory transport's curve, and the transport was named as the run's cause. NCCL
    picks one transport per communicator, so a transport the ok bandwidth-bound sizes refute is no cause: the row is
    a lone timing, not judged."""
    h100 = ROOT / "tests/fixtures/peertools"
    src = h100 / "h100x2-visits11-13/visit13/nccl/all_reduce_Tree_LL_r1.txt"
    out = tmp_path / "check.json"
    main(["check", str(src), "--from", str(h100 / "h100x2/machine-raw"), "--json", str(out)])
    check = json.loads(out.read_text())
    verdicts = {(m["size_bytes"], bool(m["extra"].get("inplace"))): v
                for m, v in zip(check["measurements"], check["extra"]["check"]["verdicts"])}
    assert verdicts[(2 << 20, False)]["cause_key"] == "lone-row"
    assert not any(v["cause_key"].startswith("collective-") for v in verdicts.values())


def test_a_run_wide_cause_at_one_size_among_ok_ones_is_refuted(tmp_path):
    """One row at half its rate sits on 'the links at half their rate', a cause of the whole run that would slow the ok
    sizes around it and the other placement too: they refute it, and the row is a lone timing (it was low with that
    cause named)."""
    lone = _verdicts(tmp_path, _slowed(EAGER.read_text(), 64 << 20, True, factor=2))[(64 << 20, True)]
    assert lone["verdict"] == "not judged" and lone["cause_key"] == "lone-row"
