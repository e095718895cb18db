"""NUMA policy calls per architecture (engines/gpu/mempolicy.py).

The old code called mbind/set_mempolicy/get_mempolicy by x86_64 numbers (237-239) everywhere; on
aarch64 (asm-generic table: mbind 235, get_mempolicy 236, set_mempolicy 237) those are other calls,
so nothing was placed and nothing said so. qemu-user was not installed on this CI machine, so the
aarch64 path is checked against the kernel's table and a recording libc, not run under emulation.
"""
from __future__ import annotations

import ctypes
import mmap
import re
from pathlib import Path

import pytest

from linkscope import envinfo
from linkscope.engines.gpu import buffers, mempolicy
from linkscope.engines.gpu.mempolicy import SYSCALL_NUMBERS


def _header_numbers(path: Path) -> tuple[int, int, int] | None:
    if not path.exists():
        return None
    text = path.read_text()
    found = {name: int(n) for name, n in re.findall(r"#define __NR_(mbind|set_mempolicy|get_mempolicy)\s+(\d+)", text)}
    return found["mbind"], found["set_mempolicy"], found["get_mempolicy"]


def test_table_matches_the_kernel_headers() -> None:
    # linux include/uapi/asm-generic/unistd.h (aarch64, riscv64, loongarch64): 235 / 237 / 236
    assert SYSCALL_NUMBERS["aarch64"] == (235, 237, 236)
    assert SYSCALL_NUMBERS["x86_64"] == (237, 238, 239)  # arch/x86/entry/syscalls/syscall_64.tbl
    generic = _header_numbers(Path("/usr/include/asm-generic/unistd.h"))
    if generic is not None:  # the installed headers say the same (linux-libc-dev)
        assert generic == SYSCALL_NUMBERS["aarch64"] == SYSCALL_NUMBERS["riscv64"]
    x86 = _header_numbers(Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"))
    if x86 is not None:
        assert x86 == SYSCALL_NUMBERS["x86_64"]


class RecordingLibc:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def syscall(self, number: int, *args: object) -> int:
        self.calls.append(number)
        return 0


def test_aarch64_without_libnuma_uses_the_generic_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = RecordingLibc()
    monkeypatch.setattr(mempolicy.platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(mempolicy, "_load_libnuma", lambda: None)
    monkeypatch.setattr(mempolicy, "_load_libc", lambda: libc)
    assert buffers._prefer_node(1) is True and libc.calls == [237]  # set_mempolicy, not x86's mbind
    buffers.page_node(4096)
    assert libc.calls[-1] == 236  # get_mempolicy
    placed = buffers._mmap_on_node(1 << 16, 1)
    assert placed is not None and libc.calls[-1] == 235  # mbind
    placed[0].close()
    row = envinfo.numa_row()
    assert row["ok"] and "aarch64" in row["version"] and "235/237/236" in row["version"]


def test_unknown_architecture_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mempolicy.platform, "machine", lambda: "s390x")
    monkeypatch.setattr(mempolicy, "_load_libnuma", lambda: None)
    assert buffers._prefer_node(0) is False and buffers._mmap_on_node(4096, 0) is None
    assert "s390x" in buffers.placement_unavailable() and "not NUMA-placed" in buffers.placement_unavailable()
    assert not envinfo.numa_row()["ok"]


def test_libnuma_is_used_by_name_where_it_loads() -> None:
    calls: list[str] = []

    class Lib:
        def mbind(self, *a: object) -> int:
            calls.append("mbind")
            return 0

        def set_mempolicy(self, *a: object) -> int:
            calls.append("set_mempolicy")
            return 0

        def get_mempolicy(self, *a: object) -> int:
            calls.append("get_mempolicy")
            return 0

    policy = mempolicy.mempolicy("ppc64le", libnuma=Lib)
    assert policy.available and policy.prefer(3) and calls == ["set_mempolicy"]
    assert policy.mbind_preferred(4096, 4096, 70) and calls[-1] == "mbind"  # node 70: a two-word mask


def test_this_hosts_kernel_answers_through_the_syscall_path() -> None:
    """On the machine running the tests (x86_64 or aarch64): the syscall path, no libnuma, reads the
    node of a touched page from the real kernel (node 0 on a one-node CI box, some node elsewhere)."""
    policy = mempolicy.mempolicy(libnuma=lambda: None)
    if not policy.available:
        pytest.skip(policy.why_not)
    mm = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    ptr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    ctypes.memset(ptr, 1, 4096)
    assert isinstance(policy.node_of(ptr), int)
    del ptr
    mm.close()
