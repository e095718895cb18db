"""Helpers for the comm tests: run the real ``linkscope`` CLI under mpirun with a timeout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def mpirun_available() -> bool:
    if not shutil.which("mpirun"):
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def mpirun(n: int, *args: str, timeout_s: float = 90) -> subprocess.CompletedProcess:
    """``mpirun -n N python -m linkscope ARGS`` (as root too); a hang fails the test, not the suite."""
    env = mpi_env()
    cmd = ["mpirun", "--oversubscribe", "-n", str(n), sys.executable, "-m", "linkscope", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hang: {' '.join(cmd)} did not finish in {timeout_s} s\n{exc.stdout}\n{exc.stderr}")


needs_mpi = pytest.mark.skipif(not mpirun_available(), reason="mpirun and mpi4py required")


def mpi_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_rmaps_base_oversubscribe": "1", "PYTHONPATH": str(ROOT / "src")})
    env.update(extra)
    return env


def mpirun_popen(n: int, *args: str, **env: str) -> subprocess.Popen:
    """``mpirun -n N python -m linkscope ARGS`` started in the background, stdout/stderr piped."""
    cmd = ["mpirun", "--oversubscribe", "-n", str(n), sys.executable, "-m", "linkscope", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env(**env),
                            cwd=ROOT)


def child_pids(pid: int) -> list[int]:
    """Direct children of ``pid`` (Open MPI's mpirun forks the local ranks itself)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return sorted(out)


def sim_backend(gpus: int = 4, spec: str | None = None, **kw):
    """The simulated collective backend on ``nvswitch:<gpus>`` (or the synthetic ``spec``)."""
    from linkscope.comm.nccl_backend import SimNccl
    from linkscope.topology.synthetic import synthetic_topology

    return SimNccl(synthetic_topology(spec or f"nvswitch:{gpus}"), **kw)


def moody_backend(gpus: int, modes: list[float]):
    """A simulated node whose every new set of communicators draws a mode for its life: the k-th set made runs each
    group ``modes[k]`` times as long (2 x H200: ~13 or ~18.5 us per small op, fixed when a set is made: call 6 of
    docs/runs/h200x2-2026-11-28c)."""
    from linkscope.comm.nccl_backend import SimNccl
    from linkscope.topology.synthetic import synthetic_topology

    class Moody(SimNccl):
        def __init__(self):
            super().__init__(synthetic_topology(f"nvswitch:{gpus}"))
            self.sets = self.destroyed = 0

        def init_all(self, devices):
            self.factor = modes[self.sets % len(modes)]
            self.sets += 1
            return super().init_all(devices)

        def destroy(self, peers):
            self.destroyed += 1
            return super().destroy(peers)

        def _run_group(self, key, calls, model):
            before = self.clock.now_s
            super()._run_group(key, calls, model)
            self.clock.now_s += (self.clock.now_s - before) * (self.factor - 1.0)

    return Moody()
