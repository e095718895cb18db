"""``linkscope profile``: capture an MPI program's traffic matrix without changing the program."""
from __future__ import annotations

import os
from pathlib import Path

import typer

from ..atomic import check_paths
from ..errors import UserError
from .common import stderr_console


def register(app: typer.Typer) -> None:
    @app.command(
        "profile",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def profile_command(
        command: list[str] = typer.Argument(..., help="The launcher command, after --."),
        output: Path = typer.Option(Path("traffic.json"), "-o", "--output", help="Traffic matrix to write (.json/.csv/.npy)."),
        inject: str = typer.Option("auto", "--inject", help="How LD_PRELOAD reaches the ranks: auto | ompi | hydra | srun | env."),
        rows_dir: Path | None = typer.Option(None, "--rows-dir", help="Where ranks write rows (shared FS for multi-node)."),
        keep_rows: bool = typer.Option(False, "--keep-rows", help="Keep the per-rank rows."),
        mpicc: str | None = typer.Option(None, "--mpicc", help="MPI compiler wrapper (default $MPICC or mpicc)."),
    ) -> None:
        """Run an MPI program with a PMPI interposer preloaded and write who sent how much to whom.

        Example: linkscope profile -o traffic.json -- mpirun -n 8 ./app
        (mpi4py programs: linkscope profile -o t.json -- mpirun -n 4 python -m linkscope.traffic.capture app.py)
        """
        from ..traffic.capture import profile
        from ..traffic.io import check_suffix, save_traffic
        from ..units import format_size

        check_suffix(output, "--output")
        check_paths(outputs={"--output": output}, output_dirs={"--rows-dir": rows_dir})
        err = stderr_console()
        result = profile(command, dict(os.environ), inject=inject, rows_dir=rows_dir, keep_rows=keep_rows, mpicc=mpicc)
        if result.matrix is None:
            raise UserError(f"the program wrote no traffic rows (exit code {result.returncode})",
                            hint="does it call MPI_Init/MPI_Finalize, and is it dynamically linked to MPI?")
        save_traffic(result.matrix, output)
        m = result.matrix
        err.print(f"wrote {output}: {m.ranks} ranks on {len(m.hosts_list())} host(s), "
                  f"{format_size(m.total_bytes)} point-to-point, {int(m.offdiagonal_messages().sum())} messages")
        if result.returncode != 0:
            err.print(f"the program exited with code {result.returncode}", style="yellow")
            raise typer.Exit(3)
