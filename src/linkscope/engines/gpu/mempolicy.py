"""NUMA memory policy calls (``mbind``, ``set_mempolicy``, ``get_mempolicy``) on any Linux architecture.

libnuma exports the three as plain functions (numactl ``syscall.c``: ``mbind``, ``set_mempolicy``,
``get_mempolicy`` wrappers over the kernel calls), so where ``libnuma.so.1`` loads they are called by
name and the architecture does not matter. Without libnuma the kernel is called through libc's
``syscall()`` with the number for this machine: the numbers differ by architecture, and x86_64's
(237-239) are other calls on aarch64, so a wrong table silently places nothing.

``SYSCALL_NUMBERS`` (mbind, set_mempolicy, get_mempolicy):

* x86_64: 237, 238, 239 (linux ``arch/x86/entry/syscalls/syscall_64.tbl``; the installed
  ``/usr/include/x86_64-linux-gnu/asm/unistd_64.h:241-243``, linux-libc-dev 6.1);
* aarch64, riscv64, loongarch64 (the generic table): 235, 237, 236 (linux
  ``include/uapi/asm-generic/unistd.h``: ``__NR_mbind 235``, ``__NR_get_mempolicy 236``,
  ``__NR_set_mempolicy 237``; ``/usr/include/asm-generic/unistd.h:675-680``, linux-libc-dev 6.1).

Any other architecture without libnuma: no placement, and ``why_not`` says so (the caller notes it).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MPOL_DEFAULT = 0
MPOL_PREFERRED = 1
MPOL_F_NODE = 1
MPOL_F_ADDR = 2
_GENERIC = (235, 237, 236)
#: machine (``platform.machine()``) -> (mbind, set_mempolicy, get_mempolicy) syscall numbers.
SYSCALL_NUMBERS: dict[str, tuple[int, int, int]] = {
    "x86_64": (237, 238, 239), "amd64": (237, 238, 239),
    "aarch64": _GENERIC, "arm64": _GENERIC, "riscv64": _GENERIC, "loongarch64": _GENERIC,
}


def _load_libnuma() -> Any | None:
    name = ctypes.util.find_library("numa") or "libnuma.so.1"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
        return lib if all(hasattr(lib, f) for f in ("mbind", "set_mempolicy", "get_mempolicy")) else None
    except OSError:
        return None


def _load_libc() -> Any | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


@dataclass(frozen=True)
class MemPolicy:
    """The three calls for this process, or why there are none. ``how`` names the path taken."""

    machine: str
    how: str
    why_not: str
    _lib: Any = None
    _numbers: tuple[int, int, int] | None = None

    @property
    def available(self) -> bool:
        return not self.why_not

    def _call(self, which: int, name: str, *args: Any) -> int:
        if self._numbers is None:
            return int(getattr(self._lib, name)(*args))
        return int(self._lib.syscall(self._numbers[which], *args))

    @staticmethod
    def _mask(node: int) -> tuple[Any, ctypes.c_ulong]:
        words = node // 64 + 1
        mask = (ctypes.c_ulong * words)()
        mask[node // 64] = 1 << (node % 64)
        return mask, ctypes.c_ulong(words * 64 + 1)  # maxnode: the kernel reads maxnode - 1 bits

    def mbind_preferred(self, ptr: int, size_bytes: int, node: int) -> bool:
        if not self.available:
            return False
        mask, maxnode = self._mask(node)
        return self._call(0, "mbind", ctypes.c_void_p(ptr), ctypes.c_ulong(size_bytes), MPOL_PREFERRED,
                          mask, maxnode, 0) == 0

    def prefer(self, node: int | None) -> bool:
        """This thread's allocations prefer ``node`` (None: back to the default policy)."""
        if not self.available:
            return False
        if node is None:
            return self._call(1, "set_mempolicy", MPOL_DEFAULT, None, ctypes.c_ulong(0)) == 0
        mask, maxnode = self._mask(node)
        return self._call(1, "set_mempolicy", MPOL_PREFERRED, mask, maxnode) == 0

    def node_of(self, ptr: int) -> int | None:
        if not self.available or not ptr:
            return None
        node = ctypes.c_int(-1)
        rc = self._call(2, "get_mempolicy", ctypes.byref(node), None, ctypes.c_ulong(0), ctypes.c_void_p(ptr),
                        MPOL_F_NODE | MPOL_F_ADDR)
        return node.value if rc == 0 and node.value >= 0 else None


def mempolicy(machine: str | None = None, *, libnuma: Callable[[], Any | None] | None = None,
              libc: Callable[[], Any | None] | None = None) -> MemPolicy:
    """The policy calls for ``machine`` (default this one): libnuma's functions where it loads,
    else libc ``syscall`` with this architecture's numbers, else none with the reason."""
    arch = machine or platform.machine()
    lib = (libnuma or _load_libnuma)()
    if lib is not None:
        return MemPolicy(arch, "libnuma (mbind/set_mempolicy/get_mempolicy by name)", "", lib)
    numbers = SYSCALL_NUMBERS.get(arch.lower())
    if numbers is None:
        return MemPolicy(arch, "none", f"no libnuma and no known mbind/set_mempolicy syscall numbers for {arch}: "
                                       "pinned buffers are not NUMA-placed (install libnuma1)")
    c = (libc or _load_libc)()
    if c is None or not hasattr(c, "syscall"):
        return MemPolicy(arch, "none", "libc syscall() unavailable: pinned buffers are not NUMA-placed")
    return MemPolicy(arch, f"syscall {numbers[0]}/{numbers[1]}/{numbers[2]} (mbind/set_mempolicy/get_mempolicy, "
                           f"{arch})", "", c, numbers)
