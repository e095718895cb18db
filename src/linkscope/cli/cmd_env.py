"""``linkscope env``: versions and which backends are usable here, and why not."""
from __future__ import annotations

import json

import typer

from ..atomic import check_paths
from .common import WIDE_HELP, json_option, text_console, write_json_output


def register(app: typer.Typer) -> None:
    @app.command("env")
    def env(json_path: str | None = json_option("the versions and backends"),
            wide: bool = typer.Option(False, "--wide", help=WIDE_HELP)) -> None:
        """Versions, and the backends available here (NVML, CUDA/CuPy, ROCm, MPI, NCCL) and why not.

        Example: linkscope env --json -
        """
        from ..envinfo import collect

        check_paths(outputs={"--json": json_path})
        report = collect()
        if write_json_output(json_path, json.dumps(report, indent=2)):
            return
        from rich.table import Table

        console = text_console(wide)
        versions = Table(title="versions", show_header=False)
        for key, value in report["versions"].items():
            versions.add_row(key, str(value))
        console.print(versions)
        backends = Table(title="backends")
        backends.add_column("backend")
        backends.add_column("available")
        backends.add_column("version / why not")
        backends.add_column("tested on")
        for item in report["backends"]:
            backends.add_row(item["name"], "yes" if item["ok"] else "no",
                             item.get("version") or "" if item["ok"] else item["reason"], item.get("tested_on") or "")
        console.print(backends)
