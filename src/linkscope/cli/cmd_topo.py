"""``linkscope topo``: what is linked to what (levels, theoretical GB/s, affinity)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import UserError
from .common import stderr_console, stdout_console


def parse_gpu_list(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(f"bad GPU list {text!r}", hint="use comma-separated indices, e.g. 0,1,3") from None
    if not values:
        raise UserError("empty GPU list")
    return values


def register(app: typer.Typer) -> None:
    topo_app = typer.Typer(
        help="Show the GPU topology: levels (nvidia-smi codes), theoretical GB/s, NUMA, cores, nearest NIC.",
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @topo_app.callback()
    def topo(
        ctx: typer.Context,
        preset: Optional[str] = typer.Option(None, "--preset", help="A shipped preset (see --list-presets)."),
        from_file: Optional[Path] = typer.Option(None, "--from", help="A topology JSON file."),
        synthetic: Optional[str] = typer.Option(None, "--synthetic", help="e.g. nvswitch:8, pcie:2x4."),
        as_json: bool = typer.Option(False, "--json", help="Print the topology model as JSON."),
        output: Optional[Path] = typer.Option(None, "-o", "--output", help="Also write the JSON model to this file."),
        gpus: Optional[str] = typer.Option(None, "--gpus", help="Show only these GPUs, e.g. 0,1."),
        list_presets: bool = typer.Option(False, "--list-presets", help="List the shipped presets."),
    ) -> None:
        """Show the topology of this machine (live discovery), a preset, a file or a synthetic spec.

        Examples: linkscope topo;  linkscope topo --preset mi250x-8gcd;  linkscope topo --json > t.json
        """
        if ctx.invoked_subcommand is not None:
            return
        from ..topology import io
        from ..topology.presets import load_preset, preset_names

        if list_presets:
            for name in preset_names():
                typer.echo(f"{name}\t{load_preset(name).description}")
            return
        from ..discovery.auto import resolve_topology

        topology, note = resolve_topology(preset, str(from_file) if from_file else None, synthetic, allow_fallback=preset is None and from_file is None and synthetic is None)
        if note:
            stderr_console().print(f"note: {note}", style="yellow")
        selected = parse_gpu_list(gpus)
        if output is not None:
            io.save(topology, output)
        if as_json:
            typer.echo(io.dumps(topology), nl=False)
            return
        from ..report.topology_view import build_view, render_rich

        render_rich(build_view(topology, selected), stdout_console())

    @topo_app.command("export")
    def export(
        raw: Path = typer.Option(..., "--raw", help="Directory to record what discovery reads (golden fixture)."),
        sysfs_root: Path = typer.Option(Path("/"), "--sysfs-root", help="Read sysfs under this root instead of /."),
    ) -> None:
        """Record what discovery reads on this machine (NVML facts, sysfs tree, rocm-smi output).

        Example: linkscope topo export --raw fixtures/mynode
        """
        from ..discovery.raw import export_raw

        for path in export_raw(raw, sysfs_root=sysfs_root):
            typer.echo(str(path))

    app.add_typer(topo_app, name="topo")
