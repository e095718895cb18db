"""Small C sources shipped in the package, compiled on first use into a private per-user cache.

Two users today: the PMPI traffic interposer (``traffic.capture``, built with ``mpicc``) and the
native NCCL eager launch loop (``comm.eagerloop``, built with the system C compiler). One home for
how such a library is built and trusted:

* Where: ``$XDG_CACHE_HOME/linkscope/<kind>/<key>/`` (``~/.cache/linkscope/...`` when the variable is
  unset or not an absolute path, as the XDG spec asks). ``key`` hashes the source, the compiler's path
  and anything else that changes the binary (``mpicc -show``), so an edited source or another compiler
  never reuses a stale build.
* Safely: every folder from ``linkscope/`` down that we create is made ``0700``; every one of them
  (made now or found) must be a real folder (not a symbolic link) owned by this user, and one that group
  or others can write (an older linkscope made them under the user's umask) has that write bit taken
  away; a cached library must be a regular file of this user, and one that group or others could have
  written is built again over it. A link, or a folder or library of another user, is refused with one
  line (``BackendUnavailable``): a library another user can replace would run their code in this process.
* Atomically: the compiler writes a temporary file (``mkstemp``, private) in the same folder, which is
  renamed over the library's name only once it is complete; concurrent first uses (one per MPI rank)
  each build and the last rename wins, never a half-written library.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import BackendUnavailable

__all__ = ["build_library", "cache_root", "find_c_compiler", "private_folder"]

#: Seconds a compile may take: the sources here are a few hundred lines (well under a second with gcc -O2).
COMPILE_TIMEOUT_S = 120


def cache_root(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/linkscope``, or ``~/.cache/linkscope`` (the variable unset or relative)."""
    xdg = environ.get("XDG_CACHE_HOME") or ""
    base = Path(xdg) if os.path.isabs(xdg) else Path(environ.get("HOME") or Path.home()) / ".cache"
    return base / "linkscope"


def find_c_compiler(environ: Mapping[str, str]) -> str | None:
    """The C compiler to build with: ``$CC``, else the one Python was built with (``sysconfig``'s CC,
    first word), else ``cc``, ``gcc``, ``clang`` on PATH; None when none is found."""
    candidates = [environ.get("CC") or "", (sysconfig.get_config_var("CC") or "").split(" ")[0], "cc", "gcc", "clang"]
    for name in candidates:
        if name:
            found = shutil.which(name, path=environ.get("PATH"))
            if found:
                return found
    return None


_SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH


def _owned(path: Path, *, folder: bool) -> os.stat_result:
    """``path``'s lstat when it is a plain folder (or regular file) of this user; BackendUnavailable otherwise."""
    info = os.lstat(path)
    kind_ok = stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)
    if not kind_ok:
        what = "folder" if folder else "file"
        raise BackendUnavailable(f"{path} is not a plain {what} (a link or something else): refusing to use it")
    if info.st_uid != os.getuid():
        raise BackendUnavailable(f"{path} belongs to another user (uid {info.st_uid}): refusing to use it")
    return info


def private_folder(root: Path, *parts: str) -> Path:
    """``root/parts...``, each missing folder created ``0700``; ``root`` and every part checked (module doc).
    The folders above ``root`` (``~/.cache``) are the user's own business and not checked."""
    for name in parts:
        if not name or name in (".", "..") or "/" in name:
            raise ValueError(f"bad cache folder name {name!r}")
    path = root
    for i, name in enumerate(("", *parts)):
        path = path / name if name else path
        try:
            path.mkdir(mode=0o700, parents=(i == 0), exist_ok=True)
        except OSError as exc:
            raise BackendUnavailable(f"cannot create the cache folder {path}: {exc.strerror or exc}") from None
        info = _owned(path, folder=True)
        if info.st_mode & _SHARED_WRITE:
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~_SHARED_WRITE)
    return path


def build_library(source: str, name: str, compiler: str, *, kind: str, environ: Mapping[str, str],
                  flags: Sequence[str] = (), key_extra: str = "", cache: Path | None = None) -> Path:
    """The shared library ``name`` built from C ``source`` with ``compiler`` (a path), cached (module doc).

    BackendUnavailable (one line) when the compiler fails or the cache is not safe to use."""
    key = hashlib.sha256("\0".join((source, compiler, " ".join(flags), key_extra)).encode()).hexdigest()[:16]
    folder = private_folder(cache or cache_root(environ), kind, key)
    library = folder / name
    if os.path.lexists(library) and not _owned(library, folder=False).st_mode & _SHARED_WRITE:
        return library  # else built again, over it
    stem = name.removesuffix(".so")
    fd, src_name = tempfile.mkstemp(prefix=f".{stem}.", suffix=".c", dir=folder)
    with os.fdopen(fd, "w") as out:
        out.write(source)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{stem}.", suffix=".so", dir=folder)
    os.close(fd)
    try:
        try:
            result = subprocess.run([compiler, "-shared", "-fPIC", "-O2", *flags, "-o", tmp_name, src_name],
                                    capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendUnavailable(f"{Path(compiler).name} could not run: {exc}") from None
        if result.returncode != 0:
            last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no message"]
            raise BackendUnavailable(f"{Path(compiler).name} failed to build {name}: {last[0]}")
        os.chmod(tmp_name, 0o700)
        os.replace(tmp_name, library)
    finally:
        for leftover in (tmp_name, src_name):
            if os.path.lexists(leftover):
                os.unlink(leftover)
    return library
