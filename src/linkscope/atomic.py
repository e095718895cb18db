"""The one output writer: every file linkscope writes for a user goes through here.

* Atomic: the content goes to a temporary file in the target's folder, is flushed to disk, then
  renamed over the target; a reader sees the old file or the new one, never half of one.
* Permissions as any other program would leave them: a new file gets ``0666 & ~umask``; an
  existing file keeps its mode (overwriting a shared 0664 report keeps it readable for the team).
* No silent replacement of what is not a plain file: a symbolic link, FIFO, device or folder at
  the target is refused (``check_replaceable``) rather than replaced by a file.
* Several files at once (``write_files_atomic``: one env file per rank) are all-or-nothing: every
  file is staged before any is renamed into place, and a failure rolls the renamed ones back.
* Standard output is a stream, not a file to replace: ``-`` and the names of this process's stdout
  (``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/1``) are ``STDOUT`` (``stdout_alias``); the CLI
  maps them to ``-`` before a command runs, so each command writes its record to the stream.
* Before any work, a command's outputs are checked (``check_paths``): each can be written, and none
  is an input or another output of the same invocation.
* An ``OSError`` (full disk, read-only file system, a name too long) is a ``UserError`` naming
  the file: one line, no traceback.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import UserError

__all__ = [
    "STDOUT",
    "check_file_name",
    "check_replaceable",
    "current_umask",
    "file_kind",
    "new_file_mode",
    "sidecar_path",
    "stdout_alias",
    "write_bytes_atomic",
    "write_files_atomic",
    "write_json_atomic",
    "write_text_atomic",
]

#: How an output option names standard output.
STDOUT = "-"
_STDOUT_NAMES = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
_STREAM_DIRS = ("/dev/", "/proc/")

_TMP_PREFIX = ".linkscope-"  # short: a 250-byte file name still leaves room for the temp name


def stdout_alias(path: Path | str) -> bool:
    """True when ``path`` names this process's standard output: ``-``, ``/dev/stdout`` and its
    siblings, or another ``/dev`` / ``/proc`` name of the same open file (``/proc/<pid>/fd/1``)."""
    text = os.fspath(path)
    if text == STDOUT or text in _STDOUT_NAMES:
        return True
    if not isinstance(text, str) or not text.startswith(_STREAM_DIRS):
        return False
    try:
        st, out = os.stat(text), os.fstat(1)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino)


def current_umask() -> int:
    """The process umask, read without changing it where Linux reports it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it back at once
    os.umask(mask)
    return mask


def new_file_mode(path: Path | str) -> int:
    """The mode ``path`` should have after a write: its own when it is an existing file, else
    ``0666 & ~umask`` (what ``open(path, "w")`` would give)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words (``"a FIFO (named pipe)"``), from its ``st_mode``; None for a
    regular file."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def check_replaceable(path: Path | str, option: str | None = None) -> None:
    """Refuse a target that is not a plain file (or absent): a write would replace a symbolic
    link, FIFO, device or folder by a file."""
    if stdout_alias(path):
        return
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    kind = file_kind(mode)
    if kind is None:
        return
    where = f"{option} {path}" if option else str(path)
    if stat.S_ISLNK(mode):
        raise UserError(f"{where}: is {kind} (to {os.readlink(path)}); linkscope does not replace links",
                        hint="give the real file name, or remove the link first")
    if stat.S_ISDIR(mode):
        raise UserError(f"{where}: is a folder, expected a file name")
    raise UserError(f"{where}: is {kind}, not a regular file; linkscope writes regular files only",
                    hint="use '-' for stdout where the option allows it")


def check_file_name(path: Path | str, option: str | None = None) -> None:
    """Refuse a file name that ends in a path separator (``-o newdir/``): the user named a folder,
    and ``Path`` would silently drop the slash and write a file called ``newdir``."""
    text = os.fspath(path)
    if isinstance(text, str) and text.endswith(os.sep) and text.strip(os.sep):
        where = f"{option} {text}" if option else text
        raise UserError(f"{where}: ends with '{os.sep}', which names a folder; expected a file name",
                        hint=f"give a file name inside it, e.g. {text}out.json")


def check_output_file(path: str | Path | None, option: str) -> None:
    """Refuse, before any work is done, an output file that cannot be written: its folder does not
    exist (a typo is not silently turned into new folders), is not a folder or is not writable (a
    file is created there and removed, which also catches /proc and read-only file systems), the
    name is longer than the file system allows, or the path is a folder, a symbolic link, a FIFO or
    a device (``atomic.check_replaceable``). ``None`` and ``"-"`` (stdout) pass."""
    if path is None or str(path) == STDOUT:
        return
    check_file_name(path, option)
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if not str(path).strip() or not target.name:
        raise UserError(f"{option} {str(path)!r}: not a file name")
    check_replaceable(target, option)
    name_max = _path_limit(parent, "PC_NAME_MAX", 255)
    if len(os.fsencode(target.name)) > name_max:
        raise UserError(f"{option}: the file name is {len(os.fsencode(target.name))} bytes long; "
                        f"the file system allows {name_max}", hint="choose a shorter name")
    if len(os.fsencode(os.path.abspath(target))) >= _path_limit(parent, "PC_PATH_MAX", 4096):
        raise UserError(f"{option}: the path is longer than the file system allows", hint="choose a shorter path")
    if not parent.exists():
        raise UserError(f"{option} {target}: folder {parent} does not exist", hint=f"create it first: mkdir -p {parent}")
    if not parent.is_dir():
        raise UserError(f"{option} {target}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"{option} {target}: not writable")
    try:
        fd, probe = tempfile.mkstemp(prefix=".linkscope-probe-", dir=parent)
    except OSError as exc:
        raise UserError(f"{option} {target}: cannot create a file in {parent}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)


def _path_limit(folder: Path, name: str, default: int) -> int:
    """``pathconf`` of the nearest existing folder (NAME_MAX, PATH_MAX), or ``default``."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return int(os.pathconf(probe if probe.exists() else ".", name))
    except (OSError, ValueError):
        return default


def check_output_dir(path: str | Path | None, option: str) -> None:
    """Refuse an output folder that cannot be created or written (its parent must exist), and an
    existing file or link given where a folder is expected."""
    if path is None:
        return
    target = Path(path)
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise UserError(f"{option} {target}: exists and is not a folder", hint="give a folder name")
    if target.exists():
        if not os.access(target, os.W_OK | os.X_OK):
            raise UserError(f"{option} {target}: not writable")
        return
    check_output_file(target, option)


def _identity(path: str | Path) -> tuple:
    """What makes two path names the same file: (device, inode) when it exists, else the real path."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.realpath(os.path.abspath(path)))


def check_paths(*, inputs: dict[str, Any] | None = None, outputs: dict[str, Any] | None = None,
                output_dirs: dict[str, Any] | None = None) -> None:
    """The one guard every command runs before any work: each output file and folder can be
    written (``check_output_file`` / ``check_output_dir``), and no output is an input or another
    output of the same invocation (same name, or the same file through a link, ``..`` or a hard
    link). ``inputs``/``outputs``/``output_dirs`` map an option name to a path, ``None`` (not
    given) or a list of paths (``report RUN.json...``); ``"-"`` (stdout) is never a clash."""
    named: list[tuple[str, str, str | Path]] = []  # (role, option, path)
    for role, group in (("input", inputs), ("output", outputs), ("output folder", output_dirs)):
        for option, value in (group or {}).items():
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if item is not None and str(item) != STDOUT:
                    named.append((role, option, item))
    for role, option, path in named:
        if role == "output":
            check_output_file(path, option)
        elif role == "output folder":
            check_output_dir(path, option)
    seen: dict[tuple, tuple[str, str, str | Path]] = {}
    for role, option, path in named:
        key = _identity(path)
        if key in seen:
            first_role, first_option, first_path = seen[key]
            if role == "input" and first_role == "input":
                continue  # reading one file twice destroys nothing
            same = "" if str(first_path) == str(path) else f" ({first_path} and {path} are the same file)"
            raise UserError(f"{option} {path} names the same file as {first_role} {first_option}{same}; "
                            "it would be overwritten", hint=f"give {option} another file name")
        seen[key] = (role, option, path)


def sidecar_path(path: Path | str) -> Path:
    """Where a run's checkpoints for ``path`` go: ``NAME.partial.SUFFIX`` beside it (``survey.json`` ->
    ``survey.partial.json``), so a partial result never replaces the complete file at ``path``."""
    target = Path(path)
    if target.suffix and target.stem:
        return target.with_name(f"{target.stem}.partial{target.suffix}")
    return target.with_name(f"{target.name}.partial")


def _os_error(path: Path, exc: OSError) -> UserError:
    return UserError(f"cannot write {path}: {exc.strerror or exc}")


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _host_tag() -> str:
    host = "".join(c for c in socket.gethostname() if c.isalnum() or c in ".-")[:32]
    return host or "host"


def _temp_prefix() -> str:
    """``.linkscope-HOST-PID-``: whose temporary file it is, so a later run can tell a leftover of a
    killed process from the file of a process still writing (``_remove_stale``)."""
    return f"{_TMP_PREFIX}{_host_tag()}-{os.getpid()}-"


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def _remove_stale(folder: Path) -> None:
    """Remove the temporary files a killed linkscope left in ``folder``: ``.linkscope-HOST-PID-*.tmp``
    of this host whose process no longer runs (SIGKILL, the OOM killer and a power cut leave one;
    nothing else can). Another host's files (a shared file system), a running process's and any other
    name are left alone; a PID reused since is taken as running (the file stays)."""
    head = f"{_TMP_PREFIX}{_host_tag()}-"
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.name.startswith(head) and e.name.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid_text = name[len(head):].split("-", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_running(int(pid_text)):
            _unlink(folder / name)


def _stage(path: Path, content: str | bytes) -> str:
    """Write ``content`` to a temp file beside ``path`` with the mode ``path`` should get; returns
    the temp file's name (the caller renames or removes it). Leftovers of killed runs in that folder
    are removed first (``_remove_stale``): a SIGKILL between this and the rename leaves a
    ``.linkscope-HOST-PID-*.tmp`` that the next write into the folder takes away."""
    mode = new_file_mode(path)
    _remove_stale(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(name: str | Path) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def _write_stream(content: str | bytes) -> None:
    """Standard output is a stream: written through, never replaced (``stdout_alias``)."""
    import sys

    if isinstance(content, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(content)
        sys.stdout.flush()


def _write_atomic(path: Path, content: str | bytes) -> None:
    if stdout_alias(path):
        _write_stream(content)
        return
    check_replaceable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _stage(path, content)
        try:
            os.replace(tmp, path)
        except BaseException:
            _unlink(tmp)
            raise
    except OSError as exc:
        raise _os_error(path, exc) from None
    _fsync_dir(path.parent)


def write_text_atomic(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    check_file_name(path)
    _write_atomic(Path(path), text)


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    check_file_name(path)
    _write_atomic(Path(path), data)


def write_json_atomic(path: Path | str, data: Any) -> None:
    """JSON with ``allow_nan=False``: a NaN is a bug (missing values are null)."""
    write_text_atomic(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def write_files_atomic(folder: Path | str, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write several files into ``folder`` all-or-nothing: each is staged (written and flushed) before
    any is renamed into place; when staging or a rename fails, the files already renamed are put
    back as they were (restored from a hard-link backup, or removed when new), a folder this call
    created is removed, and the error is raised. Returns the paths written."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: exists and is not a folder")
    targets = [folder / name for name in files]
    for target in targets:
        if target.parent != folder:
            raise ValueError(f"{target.name!r} is not a plain file name")
        check_replaceable(target)
    created: list[Path] = []
    staged: list[tuple[str, Path]] = []
    done: list[tuple[Path, str | None]] = []  # (target, backup of the old file or None)
    backup: str | None = None
    try:
        missing = folder
        while not missing.exists():
            created.append(missing)
            missing = missing.parent
        folder.mkdir(parents=True, exist_ok=True)
        for target, content in zip(targets, files.values()):
            staged.append((_stage(target, content), target))
        for tmp, target in staged:
            backup = None
            if target.exists():
                backup = str(folder / f"{_TMP_PREFIX}{secrets.token_hex(6)}.bak")
                try:
                    os.link(target, backup)
                except OSError:
                    backup = None
            os.replace(tmp, target)
            done.append((target, backup))
            backup = None
    except BaseException as exc:
        for tmp, _ in staged:
            _unlink(tmp)
        if backup is not None:  # made for a file whose rename then failed: the old file is still there
            _unlink(backup)
        for target, backup in reversed(done):
            if backup is not None:
                try:
                    os.replace(backup, target)
                except OSError:
                    pass
            else:
                _unlink(target)
        for path in created:
            try:
                path.rmdir()
            except OSError:
                break
        if isinstance(exc, OSError):
            raise UserError(f"cannot write the files in {folder}: {exc.strerror or exc} "
                            f"(nothing was written)") from None
        raise
    for _, backup in done:
        if backup is not None:
            _unlink(backup)
    _fsync_dir(folder)
    return targets
