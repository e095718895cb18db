"""``linkscope traffic``: synthetic traffic matrices (and a look at any traffic file)."""
from __future__ import annotations

from pathlib import Path

import typer

from ..atomic import check_paths
from ..errors import UserError
from .common import json_option, stderr_console, stdout_console, write_json_output


def _parse_weights(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise UserError(f"bad axis weights {text!r}", hint="comma-separated numbers, one per axis, e.g. 1,1,4") from None


def _parse_edges(path: Path | None) -> list[tuple[float, ...]] | None:
    if path is None:
        return None
    from ..userfiles import read_text

    edges = []
    for number, line in enumerate(read_text(path, "edge file").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            edges.append(tuple(float(x) for x in line.replace(",", " ").split()))
        except ValueError:
            raise UserError(f"{path} line {number}: expected 'a b [weight]', got {line!r}") from None
    return edges


def register(app: typer.Typer) -> None:
    traffic_app = typer.Typer(help="Traffic matrices: generate synthetic patterns, show a file.", no_args_is_help=True)
    app.add_typer(traffic_app, name="traffic")

    @traffic_app.command("gen")
    def gen(
        pattern: str = typer.Argument(..., help="stencil2d | stencil3d | ring | all-to-all | tree | random | random-graph | graph"),
        output: Path = typer.Option(..., "-o", "--output", help="Where to write (.json, .csv or .npy)."),
        ranks: int | None = typer.Option(None, "--ranks", help="Number of ranks."),
        grid: str | None = typer.Option(None, "--grid", help="Process grid for stencils, e.g. 4x4 or 2x2x4."),
        periodic: bool = typer.Option(False, "--periodic", help="Stencil wraps around (torus)."),
        size: str = typer.Option("1MiB", "--bytes", help="Bytes per message (halo, ring step...)."),
        weights: str | None = typer.Option(None, "--weights", help="Stencil per-axis weights, e.g. 1,1,4."),
        op: str = typer.Option("bcast", "--op", help="tree: bcast or reduce."),
        density: float = typer.Option(0.3, "--density", help="random: probability that a pair talks."),
        seed: int = typer.Option(0, "--seed", help="random, random-graph: seed."),
        degree: int = typer.Option(16, "--degree", help="random-graph: distinct ranks each rank sends to."),
        bidirectional: bool = typer.Option(False, "--bidirectional", help="ring: send both ways."),
        edges: Path | None = typer.Option(None, "--edges", help="graph: file of 'a b [weight]' lines."),
    ) -> None:
        """Write a synthetic traffic matrix.

        Example: linkscope traffic gen stencil2d --grid 4x4 --periodic --bytes 1MiB -o traffic.json
        """
        from ..traffic.io import check_suffix, save_traffic

        check_suffix(output, "--output")
        check_paths(inputs={"--edges": edges}, outputs={"--output": output})
        from ..traffic.synthetic import generate, parse_grid
        from ..units import format_size, parse_size

        matrix = generate(
            pattern,
            ranks=ranks,
            grid=parse_grid(grid) if grid else None,
            periodic=periodic,
            size_bytes=parse_size(size),
            weights=_parse_weights(weights),
            op=op,
            density=density,
            degree=degree,
            seed=seed,
            bidirectional=bidirectional,
            edges=_parse_edges(edges),
        )
        save_traffic(matrix, output)
        stderr_console().print(f"wrote {output}: {matrix.origin}, {matrix.ranks} ranks, "
                               f"{format_size(matrix.total_bytes)} in total")

    @traffic_app.command("show")
    def show(
        path: Path = typer.Argument(..., help="A traffic file (.json, .csv, .npy)."),
        json_path: str | None = json_option("the matrix (linkscope traffic JSON)"),
    ) -> None:
        """Summarise a traffic matrix: ranks, bytes, busiest pairs, hosts.

        Example: linkscope traffic show traffic.json
        """
        import json

        import numpy as np

        from ..traffic.io import load_traffic, to_dict
        from ..units import format_size

        check_paths(inputs={"PATH": path}, outputs={"--json": json_path})
        matrix = load_traffic(path)
        if write_json_output(json_path, lambda: json.dumps(to_dict(matrix))):
            return
        console = stdout_console()
        console.print(f"{path}: {matrix.ranks} ranks, {format_size(matrix.total_bytes)} between ranks ({matrix.origin})")
        if matrix.hosts:
            console.print(f"hosts: {', '.join(matrix.hosts_list())}")
        b = matrix.sparse_offdiagonal_bytes().tocoo()
        for k in np.argsort(-b.data, kind="stable")[:5]:
            console.print(f"  {int(b.row[k])} -> {int(b.col[k])}: {format_size(float(b.data[k]))}")
        for name, item in sorted(matrix.collectives.items()):
            console.print(f"  {name}: {item.get('calls', 0)} calls, {format_size(item.get('bytes', 0))}")
