"""The one output writer: umask respected, an existing file's mode kept, links and FIFOs refused,
several files all-or-nothing, OSError as one UserError line."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from linkscope import atomic
from linkscope.atomic import write_files_atomic, write_json_atomic, write_text_atomic
from linkscope.cli import main
from linkscope.errors import UserError


@pytest.fixture
def umask():
    def set_mask(mask: int) -> None:
        os.umask(mask)

    old = os.umask(0o022)
    os.umask(old)
    yield set_mask
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_new_file_follows_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    write_text_atomic(tmp_path / "a.txt", "x")
    assert mode(tmp_path / "a.txt") == expected
    assert atomic.current_umask() == mask


def test_overwrite_keeps_the_existing_mode(tmp_path, umask):
    umask(0o077)
    shared = tmp_path / "survey.html"
    shared.write_text("old")
    os.chmod(shared, 0o664)
    write_text_atomic(shared, "new")
    assert shared.read_text() == "new" and mode(shared) == 0o664


def test_symlink_and_fifo_are_refused_and_left_alone(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("keep")
    (tmp_path / "link.json").symlink_to(target)
    with pytest.raises(UserError, match="symbolic link"):
        write_json_atomic(tmp_path / "link.json", {})
    assert (tmp_path / "link.json").is_symlink() and target.read_text() == "keep"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UserError, match="FIFO"):
        write_text_atomic(tmp_path / "fifo", "x")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_oserror_is_one_user_error_line_and_no_temp_file(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, m: _Failing(fd))
    with pytest.raises(UserError, match="cannot write .*a.txt: No space left on device"):
        write_text_atomic(tmp_path / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []


class _Failing:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_many_files_all_or_nothing_on_a_full_disk(tmp_path, monkeypatch):
    """15 of 16 staged files fit, the 16th does not: no rank file appears, the folder is not left."""
    folder = tmp_path / "env"
    files = {f"rank{r}.env": f"CUDA_VISIBLE_DEVICES={r}\n" for r in range(16)}
    real_stage = atomic._stage
    calls = {"n": 0}

    def stage(path, content):
        calls["n"] += 1
        if calls["n"] == 16:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_stage(path, content)

    monkeypatch.setattr(atomic, "_stage", stage)
    with pytest.raises(UserError, match="nothing was written"):
        write_files_atomic(folder, files)
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_many_files_failed_rename_restores_the_old_set(tmp_path, monkeypatch):
    folder = tmp_path / "env"
    folder.mkdir()
    for r in range(4):
        (folder / f"rank{r}.env").write_text(f"old {r}\n")
    real_replace = os.replace
    calls = {"n": 0}

    def replace(src, dst):
        if str(dst).endswith("rank2.env") and ".linkscope-" in str(src) and not str(src).endswith(".bak"):
            calls["n"] += 1
            raise OSError(errno.EIO, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(UserError, match="Input/output error"):
        write_files_atomic(folder, {f"rank{r}.env": f"new {r}\n" for r in range(4)})
    assert calls["n"] == 1
    assert sorted(p.name for p in folder.iterdir()) == [f"rank{r}.env" for r in range(4)]
    assert [(folder / f"rank{r}.env").read_text() for r in range(4)] == [f"old {r}\n" for r in range(4)]


def test_many_files_success_replaces_and_keeps_modes(tmp_path, umask):
    umask(0o022)
    folder = tmp_path / "env"
    folder.mkdir()
    (folder / "rank0.env").write_text("old")
    os.chmod(folder / "rank0.env", 0o640)
    written = write_files_atomic(folder, {"rank0.env": "a", "rank1.env": b"b"})
    assert [p.name for p in written] == ["rank0.env", "rank1.env"]
    assert (folder / "rank0.env").read_text() == "a" and mode(folder / "rank0.env") == 0o640
    assert mode(folder / "rank1.env") == 0o644
    assert sorted(p.name for p in folder.iterdir()) == ["rank0.env", "rank1.env"]


def test_map_emit_env_on_a_full_disk_leaves_no_rank_files(tmp_path, monkeypatch, capsys):
    traffic = tmp_path / "t.json"
    assert main(["traffic", "gen", "ring", "--ranks", "8", "-o", str(traffic)]) == 0
    calls_before = 0
    real_stage = atomic._stage
    calls = {"n": 0}

    def stage(path, content):
        calls["n"] += 1
        if path.name == "rank6.env":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_stage(path, content)

    monkeypatch.setattr(atomic, "_stage", stage)
    capsys.readouterr()
    code = main(["map", str(traffic), "--synthetic", "nvswitch:8", "--solver", "heuristic", "--emit", "env",
                 "--emit-to", str(tmp_path / "env")])
    assert calls["n"] > calls_before
    err = capsys.readouterr().err
    assert code == 1 and "No space left on device" in err and "Traceback" not in err
    assert not (tmp_path / "env").exists()


def test_cli_output_keeps_a_shared_files_mode(tmp_path, umask):
    umask(0o077)
    out = tmp_path / "t.json"
    out.write_text("{}")
    os.chmod(out, 0o664)
    assert main(["topo", "--preset", "hgx-h200-4", "-o", str(out)]) == 0
    assert mode(out) == 0o664 and "linkscope.topology" in out.read_text()


def test_a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    """SIGKILL while a file was being written left a ``.linkscope-*.tmp`` that stayed for good."""
    import signal
    import subprocess
    import sys

    from linkscope.atomic import write_text_atomic

    held = ("import os, signal, sys\n"
            "from linkscope import atomic\n"
            "def hold(fd):\n"
            "    sys.stderr.write('HOLD\\n'); sys.stderr.flush()\n"
            "    while True: signal.pause()\n"
            "os.fsync = hold\n"
            f"atomic.write_text_atomic({str(tmp_path / 'out.json')!r}, 'new')\n")
    proc = subprocess.Popen([sys.executable, "-c", held], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")})
    assert proc.stderr is not None and proc.stderr.readline().strip() == "HOLD"  # an event, not a sleep
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    left = list(tmp_path.glob(".linkscope-*.tmp"))
    assert len(left) == 1  # what a kill mid-write leaves, named after its host and process
    other = tmp_path / ".linkscope-otherhost-1-abc.tmp"
    other.write_text("another host's write in progress\n")
    write_text_atomic(tmp_path / "other.json", "x")
    assert list(tmp_path.glob(".linkscope-*.tmp")) == [other]
