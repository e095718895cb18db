"""Shared CLI helpers: consoles, output-path checks."""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from ..errors import UserError

STDOUT = "-"


def stdout_console() -> Console:
    """Data goes to stdout; colour follows NO_COLOR / FORCE_COLOR / the terminal."""
    return Console(highlight=False, soft_wrap=False, width=None if os.isatty(1) else 200)


def stderr_console() -> Console:
    """Progress, warnings and notes go to stderr; a note stays one line when stderr is not a terminal
    (log files, ``2> err.txt``), so it can be grepped."""
    tty = os.isatty(2)
    return Console(stderr=True, highlight=False, soft_wrap=not tty, width=None if tty else 200)


def check_output_file(path: str | Path | None, option: str) -> None:
    """Refuse, before any work is done, an output file that cannot be written: its folder does not
    exist (a typo is not silently turned into new folders), is not a folder or is not writable, or
    the path is a folder. ``None`` and ``"-"`` (stdout) pass."""
    if path is None or str(path) == STDOUT:
        return
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UserError(f"{option} {target}: is a folder, expected a file name")
    if not parent.exists():
        raise UserError(f"{option} {target}: folder {parent} does not exist", hint=f"create it first: mkdir -p {parent}")
    if not parent.is_dir():
        raise UserError(f"{option} {target}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"{option} {target}: not writable")


def check_output_dir(path: str | Path | None, option: str) -> None:
    """Refuse an output folder that cannot be created or written (its parent must exist)."""
    if path is None:
        return
    target = Path(path)
    if target.exists():
        if not target.is_dir():
            raise UserError(f"{option} {target}: exists and is not a folder")
        if not os.access(target, os.W_OK | os.X_OK):
            raise UserError(f"{option} {target}: not writable")
        return
    check_output_file(target, option)


def write_error(path: str | Path, exc: OSError) -> UserError:
    """An OSError while writing an output, as a one-line UserError."""
    return UserError(f"cannot write {path}: {exc.strerror or exc}")
