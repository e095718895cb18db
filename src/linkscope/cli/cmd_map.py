"""``linkscope map``: choose which GPU (and NIC, cores) each rank should use."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from ..atomic import check_paths
from .common import NIC_HELP, STDOUT, json_option, stderr_console, stdout_console, with_nic_option, write_json_output
from .topoinput import TopologyInput, from_option, gpu_model_option, preset_option, synthetic_option


def _load_results(path: Path) -> dict:
    from ..userfiles import loads_strict, read_text

    return loads_strict(read_text(path, "results file"), str(path))


def _format_cost(value: float, unit: str) -> str:
    if unit == "µs":
        return f"{value:,.1f} µs"
    return f"{value:.4g} {unit}".strip()


def register(app: typer.Typer) -> None:
    @app.command("map")
    def map_command(
        traffic: Path = typer.Argument(..., help="Traffic matrix (.json, .csv or .npy)."),
        preset: str | None = preset_option("Map onto a shipped preset topology."),
        from_file: Path | None = from_option(),
        synthetic: str | None = synthetic_option("Map onto a synthetic topology, e.g. pcie:2x4."),
        gpu_model: str | None = gpu_model_option(),
        results: Path | None = typer.Option(None, "--results", help="Use measured costs from a bench RunRecord JSON."),
        metric: str = typer.Option("bandwidth", "--metric", help="bandwidth | latency | distance | alpha-beta | model."),
        method: str | None = typer.Option(None, "--method",
                                             help="Transfer method the model metric predicts with (default ce)."),
        solver: str = typer.Option("auto", "--solver", help="auto | exact | heuristic."),
        mode: str = typer.Option("map", "--mode", help="map (move ranks) or reorder (keep devices, renumber ranks)."),
        nodes: int = typer.Option(1, "--nodes", help="Map onto this many identical nodes of the topology."),
        hosts: str | None = typer.Option(None, "--hosts", help="Host names of the nodes, comma-separated."),
        nic: str | None = typer.Option(None, "--nic", help=NIC_HELP),
        node_limit: int | None = typer.Option(None, "--node-limit",
                                                 help="Explored nodes the exact search may take (deterministic budget)."),
        time_limit: float | None = typer.Option(None, "--time-limit",
                                                   help="Also stop the exact search after this many seconds "
                                                        "(the answer may then differ between machines)."),
        output: Path | None = typer.Option(None, "-o", "--output", help="Write the mapping JSON here."),
        emit: str | None = typer.Option(
            None, "--emit",
            help="Also write env files, an Open MPI rankfile (rankfile: Open MPI 4, OS CPU numbers; "
                 "rankfile-logical: Open MPI 5), Slurm options (slurm) or a runnable sbatch script (sbatch)."),
        emit_to: Path | None = typer.Option(None, "--emit-to", help="Where --emit writes (dir for env; file otherwise)."),
        json_path: str | None = json_option("the mapping"),
    ) -> None:
        """Map ranks to GPUs so that the ranks that talk most use the best links.

        Example: linkscope map traffic.json --preset k80-16 --metric bandwidth -o mapping.json --emit rankfile

        Each rank's NIC: --nic (or UCX_NET_DEVICES / NCCL_IB_HCA), chosen as bench --nic chooses it:
        linkscope map traffic.json --synthetic cluster:v100-4-nvlink-ib:2:single --nic mlx5_0,mlx5_1

        With --metric model the fabric model (with a calibrated topology's parameters, e.g.
        --from calibrated.json from linkscope model calibrate) predicts the whole exchange,
        contention included: linkscope map traffic.json --from calibrated.json --metric model
        """
        from ..mapping import emit as emitters
        from ..mapping.assignment import save_assignment, to_dict
        from ..mapping.request import MapRequest, map_request
        from ..traffic.io import load_traffic

        request = MapRequest(metric, method, solver, mode, nodes, hosts, node_limit, time_limit, emit, emit_to)
        emit_file, emit_dir = request.emit_outputs()
        check_paths(inputs={"TRAFFIC": traffic, "--from": from_file, "--results": results},
                    outputs={"--output": output, "--json": json_path, **emit_file}, output_dirs=emit_dir)
        matrix = load_traffic(traffic)
        request.check_traffic(matrix)
        choice = TopologyInput(preset, from_file, synthetic, gpu_model)
        topology, nic_choice = None, nic
        if results is None or choice.given:
            topology, nic_choice = with_nic_option(choice.resolve(allow_fallback=False), nic)
        outcome = map_request(matrix, topology, request, results=_load_results(results) if results is not None else None,
                              results_name=results.name if results is not None else "results", nic_choice=nic_choice)
        assignment = outcome.assignment
        err = stderr_console()
        for note_text in assignment.notes[1:] if assignment.uniform else assignment.notes:
            err.print(f"note: {note_text}", style="yellow")
        if output is not None:
            save_assignment(assignment, output)
            if str(output) == STDOUT:  # -o -: stdout holds the mapping JSON alone
                return
            err.print(f"wrote {output}", markup=False)
        if emit is not None:
            _emit(emitters, emit, request.emit_target, assignment, outcome.hosts, err)
        if not write_json_output(json_path, lambda: json.dumps(to_dict(assignment), indent=2)):
            _render(assignment, request.method_key, nic_choice)


def _render(assignment, method: str, nic_choice: str | None) -> None:
    """The mapping on stdout: each rank's GPU (or new rank), hosts, NICs, and its cost beside the default's."""
    console = stdout_console()
    if assignment.mode == "reorder":
        console.print(f"new rank of each process (MPI_Comm_split key): {list(assignment.new_rank_of_rank or ())}",
                      markup=False, highlight=False)
    else:  # plain: Rich's highlighting of a 32,768-number list takes half a second
        console.print(f"gpu_of_rank: {list(assignment.gpu_of_rank)}", markup=False, highlight=False)
    if assignment.host_of_rank is not None:
        console.print(f"hosts used: {len(set(assignment.host_of_rank))}")
    if nic_choice is not None and assignment.nics_of_rank:
        sets = "leaves UCX_NET_DEVICES / NCCL_IB_HCA unset" if assignment.nic_choice == "any" \
            else "sets UCX_NET_DEVICES / NCCL_IB_HCA"
        console.print(f"NIC choice: {assignment.nic_choice} (nics_of_rank in the mapping JSON; launch {sets})",
                      markup=False)
    if assignment.exchange_time_us is not None and assignment.default_exchange_time_us is not None:
        console.print(f"predicted exchange time (fabric model, method {method}, contention included): "
                      f"{_format_cost(assignment.exchange_time_us, 'µs')}; "
                      f"default: {_format_cost(assignment.default_exchange_time_us, 'µs')}")
        console.print(f"pairwise model cost (sum of message times alone): "
                      f"{_format_cost(assignment.pairwise_cost or 0.0, 'µs')}; "
                      f"default: {_format_cost(assignment.default_pairwise_cost or 0.0, 'µs')}")
    else:
        console.print(f"cost ({assignment.metric}): {_format_cost(assignment.cost, assignment.unit)}; "
                      f"default: {_format_cost(assignment.default_cost, assignment.unit)}")
    console.print(f"{assignment.summary()}  [solver: {assignment.solver}, {assignment.elapsed_s:.2f} s]", markup=False)


def _emit(emitters, kind: str, target: Path | None, assignment, hosts, err) -> None:
    from ..atomic import write_files_atomic, write_text_atomic

    if kind == "env":
        folder = target or Path("linkscope-env")
        write_files_atomic(folder, emitters.env_files(assignment))
        err.print(f"wrote {assignment.ranks} env files to {folder}/ (source rank<N>.env in each rank)")
    elif kind == "rankfile":
        path = target or Path("rankfile")
        write_text_atomic(path, emitters.rankfile(assignment, hosts))
        err.print(f"wrote Open MPI 4 rankfile {path} (OS CPU numbers: --mca rmaps_rank_file_physical 1)")
    elif kind == "rankfile-logical":
        path = target or Path("rankfile")
        write_text_atomic(path, emitters.rankfile_logical(assignment, hosts))
        err.print(f"wrote rankfile {path} (logical core indexes: Open MPI 5 --map-by rankfile:file={path})")
    elif kind == "sbatch":
        path = target or Path("job.sbatch")
        write_text_atomic(path, emitters.sbatch_script(assignment, hosts=hosts))
        err.print(f"wrote {path} (sbatch {path}; edit ./app and mapping.json)")
    else:
        text = emitters.slurm_line(assignment)
        if target is None:
            typer.echo(text, nl=False)
        else:
            write_text_atomic(target, text)
            err.print(f"wrote Slurm options to {target}")
