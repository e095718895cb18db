"""The linkscope command line: a thin shell over the library (STYLE.md C9).

Each command lives in ``cmd_<name>.py`` beside this file and exposes ``register(app)``; they are
found and registered at start-up. A module that adds subcommands to another module's group (``bench
mpi`` ... in cmd_comm.py) does it in ``extend(app)``, called after every ``register``, so the result
does not depend on the order the modules are found in. This package is the only place that reads
``os.environ`` and maps errors to exit codes:

* 0 ok; 1 user error (one line, no traceback; ``--debug`` shows it); 2 usage;
* 3 finished with errors; interrupted: 128 + the signal's number, as a shell reports a process the
  signal ended (130 Ctrl-C/SIGINT, 143 SIGTERM, 129 SIGHUP), after one line naming it (partial results
  already written to ``NAME.partial.json``; a complete file of an earlier run is left as it was);
* 141 (128 + SIGPIPE) and nothing printed when whoever reads stdout stopped reading
  (``linkscope ... | head``): what a tool that SIGPIPE ends reports, so ``set -o pipefail`` still sees
  that the output was cut; no traceback and no "Exception ignored" at exit.

The command tree is invoked here, not through click's ``main``: click turns a KeyboardInterrupt into
a bare ``Exit(130)`` and a broken pipe into a silent exit 1 before these handlers could see them.
"""
from __future__ import annotations

import codecs
import errno
import functools
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

import typer

try:  # typer >= 0.20 vendors its own copy of click
    from typer._click import core as _click_core
    from typer._click import exceptions as _click_exc
except ImportError:  # older typer uses click itself
    # the same two modules from where older typer takes them: mypy sees a second definition
    from click import core as _click_core  # type: ignore[no-redef]
    from click import exceptions as _click_exc  # type: ignore[no-redef]

from ..errors import UserError
from ..measure.sweep import EXIT_INTERRUPTED, EXIT_WITH_ERRORS
from .keep import refuse_folder_names, stdout_names
from .signals import interrupt_name, interrupt_status, stop_signals

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE
__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "EXIT_USER_ERROR", "EXIT_WITH_ERRORS", "app", "main"]

app = typer.Typer(
    name="linkscope",
    help="How the GPUs in this machine are really linked, what the links deliver, and where ranks should go.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Examples: linkscope topo;  linkscope survey -o survey.json;  linkscope bench --method ce,sm-push --direction bi",
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"linkscope {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool = typer.Option(False, "--version", "-V", help="Print the version and exit.", is_eager=True,
                                 callback=_print_version),
) -> None:
    """linkscope: topology, link bandwidth and latency, traffic mapping, counters."""


def _register_commands(names: Sequence[str] | None = None) -> None:
    """Register every ``cmd_*`` module (``names``: in this order, for tests), then their extensions."""
    if names is None:
        names = [info.name for info in pkgutil.iter_modules(__path__) if info.name.startswith("cmd_")]
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    for module in modules:
        module.register(app)
    for module in modules:
        extend = getattr(module, "extend", None)
        if extend is not None:
            extend(app)


_register_commands()


def _err(message: str) -> None:
    sys.stderr.write(f"linkscope: error: {message}\n")
    sys.stderr.flush()


_PLAIN = {"µ": "u", "–": "-", "—": "-", "→": "->", "←": "<-", "↔": "<->", "×": "x", "≥": ">=", "≤": "<=",
          "…": "...", "±": "+/-", "·": ".", "°": " deg", "‘": "'", "’": "'", "“": '"', "”": '"', "✓": "ok", "✗": "x"}


def _plain(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: characters the terminal cannot show become plain ASCII (µs -> us)."""
    if isinstance(exc, UnicodeEncodeError):
        return "".join(_PLAIN.get(c, "?") for c in exc.object[exc.start:exc.end]), exc.end
    raise exc


codecs.register_error("linkscope-plain", _plain)


def _plain_streams() -> None:
    """With an output encoding that cannot hold µ (PYTHONIOENCODING=ascii, LANG=C on old Pythons),
    write ASCII stand-ins instead of failing with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "µ→×".encode(getattr(stream, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="linkscope-plain")


_METAVARS = (("path", "PATH"), ("int", "INTEGER"), ("float", "NUMBER"))


def _tidy_help(command) -> None:
    """Help as a user should read it, for every command of the tree: option values shown as FILE-like
    words (TEXT, PATH, INTEGER; flags show none) instead of typer's ``<str>``/``<bool>``/``<list[str]>``,
    arguments by their upper-case name, and docstring paragraphs reflowed to the terminal (a line
    break in the source is not a line break on screen)."""
    import re

    if command.help:
        paragraphs = re.split(r"\n\s*\n", command.help.strip())
        command.help = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    for param in command.params:
        if param.param_type_name == "argument":
            param.display_type_rich = _no_type  # the name says it: no "<path>" / "<list[str]>" column
        if param.metavar is not None:
            continue
        if getattr(param, "is_flag", False) or getattr(param, "is_bool_flag", False):
            param.metavar = ""
        elif param.param_type_name == "argument":
            param.metavar = (param.name or "value").upper()
        else:
            try:
                bare = param.bare_type()  # typer >= 0.2x: "str", "Path", "int", "list[str]"
            except AttributeError:
                bare = getattr(getattr(param, "type", None), "name", "text")
            bare = str(bare).lower()
            param.metavar = next((word for key, word in _METAVARS if key in bare), "TEXT")
    try:  # the -h/--help option is made on first use: make it now and give it no "<bool>"
        help_option = command.get_help_option(_click_core.Context(command, help_option_names=["-h", "--help"]))
    except (AttributeError, TypeError):
        help_option = None
    if help_option is not None:
        help_option.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)


def _no_type(ctx=None) -> None:
    return None


_OUTPUT_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}
"""Write errors of a full or failing stdout (``> /dev/full``, a full disk, a lost terminal): one
line and exit 1, not a traceback. Files linkscope writes itself report these through ``atomic``."""


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _flush_stdout(code: int) -> int:
    """Flush stdout after any ending (an exit code 3 or 130 too); a full stdout is one line, exit 1."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno not in _OUTPUT_FULL:
            raise
        _err(f"cannot write the output: {exc.strerror} (stdout or a file it was redirected to)")
        _quiet_stdout()
        return code or EXIT_USER_ERROR
    except ValueError:  # closed by the caller
        pass
    return code


@functools.cache
def _command() -> _click_core.Command:
    """The click command tree of ``app``, built (and its help tidied) once per process: typer builds
    it from every command's signature, 16 ms a time, which ``main`` called in-process (the bad-input
    table's 436 rows, most CLI tests) paid on every call."""
    command = typer.main.get_command(app)
    _tidy_help(command)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns (and exits with) the exit code."""
    _plain_streams()
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)
    debug = "--debug" in args[:cut]
    if debug:  # accepted anywhere before "--", like a global flag
        args = ["--debug"] + [a for a in args[:cut] if a != "--debug"] + args[cut:]
    command = _command()
    try:
        args = stdout_names(args)  # --json /dev/stdout is stdout, as '-' (cli/keep.py)
        refuse_folder_names(args)  # -o newdir/ names a folder, not a file (cli/keep.py)
        with stop_signals():  # SIGTERM / SIGHUP end the command as Ctrl-C does (cli/signals.py)
            with command.make_context("linkscope", args) as ctx:  # not command.main: see the module text
                result = command.invoke(ctx)
            sys.stdout.flush()  # a full stdout (> /dev/full) fails here, not at exit
        code = result if isinstance(result, int) else EXIT_OK
    except typer.Exit as exc:
        code = exc.exit_code
    except (typer.Abort, EOFError):  # a prompt's input ended
        _err("interrupted")
        code = EXIT_INTERRUPTED
    except _click_exc.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as asked
            exc.show()
        else:  # one line, like every other error, pointing at the command's help
            where = f" (see: {exc.ctx.command_path} -h)" if exc.ctx is not None else ""
            _err(f"{exc.format_message().rstrip('.')}{where}")
        code = EXIT_USAGE
    except _click_exc.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except UserError as exc:
        if debug:
            raise
        _err(exc.one_line())
        code = exc.exit_code
    except KeyboardInterrupt as exc:
        if debug:
            raise
        name = interrupt_name(exc)
        _err("interrupted" if name == "Ctrl-C" else f"interrupted by {name}")
        code = interrupt_status(exc)
    except BrokenPipeError:  # the reader of stdout stopped reading (| head): quietly, as SIGPIPE would
        _quiet_stdout()
        code = EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno not in _OUTPUT_FULL:
            raise
        _err(f"cannot write the output: {exc.strerror} (stdout or a file it was redirected to)")
        _quiet_stdout()
        code = EXIT_USER_ERROR
    code = _flush_stdout(code)
    if argv is None:
        sys.exit(code)
    return code
