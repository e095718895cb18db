"""Nothing already measured is lost: where a run's partial and complete results go.

* A partial record (``complete: false``: a checkpoint after every finished step, or what was
  finished when the run was interrupted) goes to the target's *sidecar*, ``NAME.partial.SUFFIX``
  beside it (``atomic.sidecar_path``). The file the user named is not touched, so yesterday's
  complete ``survey.json`` survives a run that is killed (SIGKILL), terminated, interrupted or that
  fails at its last write.
* Only a complete record replaces the target (atomically, through ``atomic``); the sidecar is then
  removed.
* When the final write fails (full disk, file-size limit), the error names the sidecar, where the
  last checkpoint is, and says the target was left as it was.

The commands call ``write_record_file`` (through ``common.write_outputs``); nothing else here
writes.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..atomic import sidecar_path
from ..errors import UserError

__all__ = ["remove_sidecar", "sidecar_path", "write_record_file"]


def remove_sidecar(path: str | Path) -> None:
    """Remove the sidecar of ``path`` (a complete result replaced the target); absent is fine."""
    try:
        os.unlink(sidecar_path(path))
    except OSError:
        pass


def write_record_file(path: str | Path, complete: bool, write: Callable[[str], None]) -> str:
    """Write one output of a run: ``write(name)`` writes the file atomically. A partial record goes to
    the sidecar; a complete one replaces ``path`` and removes the sidecar. Returns the file written.
    A failed final write is a UserError that says where the partial results are."""
    if not complete:
        target = str(sidecar_path(path))
        write(target)
        return target
    try:
        write(str(path))
    except UserError as exc:
        side = sidecar_path(path)
        if side.exists():
            raise UserError(f"{exc}; {path} was left as it was; the partial results of this run are in {side}",
                            hint=exc.hint) from None
        raise UserError(f"{exc}; {path} was left as it was", hint=exc.hint) from None
    remove_sidecar(path)
    return str(path)


#: Options whose value is always one output file (never a folder) in every command.
FILE_OUTPUT_OPTIONS = ("-o", "--output", "--json", "--csv", "--report")


class OptionAsFileName(UserError):
    """An output option followed by another option (``topo --json --preset x``): a usage error."""

    exit_code = 2


def stdout_names(args: list[str]) -> list[str]:
    """``args`` with every output file option's value that names stdout (``/dev/stdout``,
    ``/dev/fd/1``, ``/proc/self/fd/1``: ``atomic.stdout_alias``) replaced by ``-``, so each command
    writes its stream as for ``-`` instead of refusing a link or replacing the terminal. Words after
    ``--`` belong to the user's command and are left alone."""
    from ..atomic import STDOUT, stdout_alias

    cut = args.index("--") if "--" in args else len(args)
    out = list(args)
    for i, word in enumerate(args[:cut]):
        option, eq, value = word.partition("=")
        if option not in FILE_OUTPUT_OPTIONS:
            continue
        if eq:
            if value != STDOUT and stdout_alias(value):
                out[i] = f"{option}={STDOUT}"
        elif i + 1 < cut and args[i + 1] != STDOUT and stdout_alias(args[i + 1]):
            out[i + 1] = STDOUT
    return out


def refuse_folder_names(args: list[str]) -> None:
    """Refuse ``-o newdir/`` (and the other file outputs) before the command runs: typer turns the
    value into a ``Path``, which drops the trailing slash, and a file named ``newdir`` would be
    written. Refuse an option word as the file name too (``--json --health``, the old switch
    spelling of ``--json``), which would write a file called ``--health`` (exit 2, a usage error).
    Words after ``--`` belong to the user's command and are left alone."""
    from ..atomic import check_file_name

    cut = args.index("--") if "--" in args else len(args)
    words = args[:cut]
    for i, word in enumerate(words):
        option, eq, value = word.partition("=")
        if option not in FILE_OUTPUT_OPTIONS:
            continue
        if not eq:
            if i + 1 >= len(words):
                continue
            value = words[i + 1]
        if value.startswith("-") and value != "-":
            raise OptionAsFileName(f"{option} {value}: {option} takes a file name ('-' = stdout), not the option {value}",
                                   hint=f"{option} FILE, or {option} - for stdout; a file named {value}: ./{value}")
        check_file_name(value, option)
