"""bench/device_comm.py's pure-Python path, on the simulated backend (the GPU run uses --backend cuda)."""
import json
from pathlib import Path

from tests import benchscripts

ROOT = Path(__file__).resolve().parents[2]


def test_device_comm_script_writes_its_json_and_table(tmp_path, capsys, monkeypatch):
    module = benchscripts.load("device_comm")

    def in_process(args, timeout_s):  # the same command line, without a new interpreter
        import contextlib
        import io
        import subprocess

        from linkscope.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    monkeypatch.setattr(module, "_linkscope", in_process)
    out = tmp_path / "comm.json"
    assert module.main([str(out), "--backend", "sim", "--sizes", "8,4KiB", "--no-tests"]) == 0
    data = json.loads(out.read_text())
    ops = {r["op"]: r for r in data["ops"]}
    assert ops["allreduce"]["status"] == "ok" and ops["allreduce"]["provenance"] == "simulated"
    assert [row["size_bytes"] for row in ops["allreduce"]["rows"]] == [8, 4096]
    assert ops["sendrecv"]["status"] in ("ok", "skipped")
    text = capsys.readouterr().out
    assert "busbw" in text and "allreduce" in text
