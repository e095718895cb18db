"""A stand-alone CLI for the comm tests: ``bench`` group + this package's subcommands.

Run as ``python tests/comm/cli_app.py bench mpi ...`` (under mpirun in the mpi tests) until the
lead wires ``register_bench_subcommands`` into cmd_bench.py. Errors map to exit codes as
``linkscope.cli.main`` does.
"""
from __future__ import annotations

import sys

import click
import typer

from linkscope.cli.cmd_comm import register_bench_subcommands
from linkscope.errors import UserError


def make_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    bench = typer.Typer(help="benchmarks")
    register_bench_subcommands(bench)
    app.add_typer(bench, name="bench")

    @app.callback()
    def _root() -> None:
        """test app"""

    return app


def main(argv: list[str] | None = None) -> int:
    command = typer.main.get_command(make_app())
    try:
        command.main(args=argv if argv is not None else sys.argv[1:], prog_name="linkscope", standalone_mode=False)
        return 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return 2
    except UserError as exc:
        sys.stderr.write(f"linkscope: error: {exc.one_line()}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
