"""``linkscope report``: one self-contained HTML file (and PNGs) from RunRecord JSON files."""
from __future__ import annotations

from pathlib import Path

import typer

from .common import STDOUT, check_paths, stderr_console, write_error


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        runs: list[Path] = typer.Argument(..., metavar="RUN.json...", help="RunRecord files (bench, survey, sim ...)."),
        output: Path = typer.Option(Path("report.html"), "-o", "--output", help="HTML file to write."),
        png: Path | None = typer.Option(None, "--png", help="Also write every figure as PNG into this folder."),
    ) -> None:
        """Write one self-contained HTML report (no network needed to view it) from RUN.json files.

        Topology graph, bandwidth/latency heatmaps, bandwidth vs size, measured vs predicted vs
        theoretical, concurrency totals, mappings. Simulated runs are labelled SIMULATED.

        Example: linkscope report survey.json sim.json -o report.html --png figures/
        """
        from ..report.html import write_report
        from ..results.io import load

        check_paths(inputs={"RUN.json": list(runs)}, outputs={"--output": output}, output_dirs={"--png": png})
        from ..judge.headline import with_verdict

        records = [with_verdict(load(path), again=True) for path in runs]  # today's verdict, which the report opens with
        err = stderr_console()
        for path, record in zip(runs, records):
            if not record.measurements:
                err.print(f"note: {path} holds no measurements", style="yellow", markup=False)
        try:
            result = write_report(records, output, png_dir=png)
        except OSError as exc:
            raise write_error(exc.filename or output, exc) from exc
        for note in result.notes:
            err.print(f"linkscope/report: {note}", markup=False)
        if str(output) == STDOUT:
            return
        err.print(f"wrote {result.path} ({len(result.figures)} figures"
                  + (f", {len(result.png_files)} PNG files in {png}" if png else "") + ")", markup=False)
