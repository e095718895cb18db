"""The NUMA policy calls (engines/gpu/mempolicy.py) run by an aarch64 Python under qemu-aarch64.

qemu-user's ``-strace`` names every system call by the *guest's* table (qemu 7.2, Debian
bookworm ``qemu-user-static``), so the log shows which kernel call each number reached on aarch64:
the check of the syscall numbers does not rest on linkscope's own table. qemu-user does not
implement the three calls (they return ENOSYS, errno 38, so placement itself is not exercised
here; the calls report failure and the caller notes it), but the names, modes and flags are the
ones the aarch64 kernel would receive.

Needs ``qemu-aarch64-static`` (or ``qemu-aarch64``) on PATH and an aarch64 root holding Python and
its libc: ``LINKSCOPE_AARCH64_ROOT`` (``.ci/run`` unpacks Debian's arm64 ``python3.11-minimal``,
``libpython3.11-stdlib``, ``libc6``, ``libffi8``, ``libnuma1``... there). Skipped otherwise.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

MEMPOLICY = Path(__file__).resolve().parents[2] / "src" / "linkscope" / "engines" / "gpu" / "mempolicy.py"

# Runs inside the aarch64 Python: loads mempolicy.py alone (no numpy/CuPy in the guest) and makes
# the three calls on one anonymous mapping per case; markers on stderr split qemu's log by case.
CHILD = r'''
import ctypes, importlib.util, json, mmap, os, sys
spec = importlib.util.spec_from_file_location("mempolicy", sys.argv[1])
mp = importlib.util.module_from_spec(spec); sys.modules["mempolicy"] = mp; spec.loader.exec_module(mp)
out = {}
cases = {"libnuma": {}, "syscall": {"libnuma": lambda: None},
         "x86_table": {"machine": "x86_64", "libnuma": lambda: None}}
for name, kw in cases.items():
    os.write(2, f"\n@@case {name}\n".encode())
    pol = mp.mempolicy(**kw)
    buf = mmap.mmap(-1, 1 << 16)
    ptr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    res = [pol.mbind_preferred(ptr, 1 << 16, 0), pol.prefer(0), pol.prefer(None), pol.node_of(ptr)]
    out[name] = {"machine": pol.machine, "how": pol.how, "why_not": pol.why_not, "results": res}
os.write(2, b"\n@@end\n")
print(json.dumps(out))
'''


def _qemu() -> str | None:
    return shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")


def _guest_python(root: Path) -> Path | None:
    found = sorted((root / "usr" / "bin").glob("python3*")) if root.is_dir() else []
    return next((p for p in found if p.name.replace(".", "").replace("python", "").isdigit()), None)


def _calls(log: str) -> list[str]:
    """System call names qemu logged (``PID name(args) = ret``)."""
    names = []
    for line in log.splitlines():
        parts = line.split(" ", 1)
        if len(parts) == 2 and parts[0].isdigit() and "(" in parts[1]:
            names.append(parts[1].split("(", 1)[0])
    return names


@pytest.fixture(scope="module")
def emulated() -> tuple[dict, dict[str, str]]:
    qemu = _qemu()
    root = Path(os.environ.get("LINKSCOPE_AARCH64_ROOT", ""))
    python = _guest_python(root) if os.environ.get("LINKSCOPE_AARCH64_ROOT") else None
    if qemu is None or python is None:
        pytest.skip("qemu-aarch64 and an aarch64 Python root (LINKSCOPE_AARCH64_ROOT, see .ci/run) are needed")
    run = subprocess.run([qemu, "-strace", "-L", str(root), str(python), "-c", CHILD, str(MEMPOLICY)],
                         capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    logs: dict[str, str] = {}
    for chunk in run.stderr.split("\n@@case ")[1:]:
        name, _, body = chunk.partition("\n")
        logs[name] = body.split("\n@@end\n")[0]
    return results, logs


@pytest.mark.parametrize("case", ["libnuma", "syscall"])
def test_aarch64_reaches_mbind_set_mempolicy_and_get_mempolicy(emulated, case) -> None:
    results, logs = emulated
    assert results[case]["machine"] == "aarch64" and not results[case]["why_not"]
    if case == "syscall":
        assert results[case]["how"].startswith("syscall 235/237/236")
    calls = _calls(logs[case])
    policy = [c for c in calls if c in ("mbind", "set_mempolicy", "get_mempolicy", "migrate_pages", "move_pages")]
    # libnuma asks get_mempolicy when it loads (seen in the log: before the four calls)
    assert policy[-4:] == ["mbind", "set_mempolicy", "set_mempolicy", "get_mempolicy"], policy
    assert set(policy[:-4]) <= ({"get_mempolicy"} if case == "libnuma" else set()), policy
    log = logs[case]
    assert ",65536,1," in next(line for line in log.splitlines() if " mbind(" in line)  # len, MPOL_PREFERRED
    assert any(" set_mempolicy(1," in line for line in log.splitlines())  # MPOL_PREFERRED
    assert any(" set_mempolicy(0,0,0" in line for line in log.splitlines())  # MPOL_DEFAULT, no mask
    # qemu-user has no NUMA emulation: ENOSYS, so every call reports failure (never a wrong success)
    assert results[case]["results"] == [False, False, False, None]


def test_the_x86_64_numbers_reach_other_calls_on_aarch64(emulated) -> None:
    """What the code before issue 37 did on every architecture: on aarch64, 237-239 are
    set_mempolicy, migrate_pages and move_pages, so no mbind/get_mempolicy is ever made."""
    _, logs = emulated
    calls = _calls(logs["x86_table"])
    assert "mbind" not in calls and "get_mempolicy" not in calls
    assert "migrate_pages" in calls and "move_pages" in calls
