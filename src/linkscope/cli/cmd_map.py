"""``linkscope map``: choose which GPU (and NIC, cores) each rank should use."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from ..errors import ConfigError
from ..patterns.methods import DEFAULT_METHOD
from .common import (
    FROM_HELP,
    GPU_MODEL_HELP,
    NIC_HELP,
    STDOUT,
    check_paths,
    json_option,
    resolve_topology_cli,
    stderr_console,
    stdout_console,
    with_nic_option,
    write_json_output,
)


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
        preset: str | None = typer.Option(None, "--preset", help="Map onto a shipped preset topology."),
        from_file: Path | None = typer.Option(None, "--from", help=FROM_HELP),
        synthetic: str | None = typer.Option(None, "--synthetic", help="Map onto a synthetic topology, e.g. pcie:2x4."),
        gpu_model: str | None = typer.Option(None, "--gpu-model", help=GPU_MODEL_HELP),
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
        import math

        from ..mapping import emit as emitters
        from ..mapping.api import MODES, SOLVERS, map_onto
        from ..mapping.assignment import save_assignment, to_dict
        from ..mapping.cost import METRICS, results_cost
        from ..traffic.io import load_traffic

        if metric not in METRICS:
            raise ConfigError(f"unknown metric {metric!r}", hint=f"valid metrics: {', '.join(METRICS)}")
        if solver not in SOLVERS:
            raise ConfigError(f"unknown solver {solver!r}", hint=f"valid solvers: {', '.join(SOLVERS)}")
        if mode not in MODES:
            raise ConfigError(f"unknown mapping mode {mode!r}", hint=f"valid modes: {', '.join(MODES)}")
        if method is not None and metric != "model":
            raise ConfigError(f"--method {method} applies to --metric model only (got --metric {metric})")
        if emit is not None and emit not in emitters.EMITTERS:
            raise ConfigError(f"unknown --emit {emit!r}", hint=f"valid: {', '.join(emitters.EMITTERS)}")
        if nodes < 1:
            raise ConfigError(f"--nodes must be at least 1, got {nodes}")
        if node_limit is not None and node_limit < 1:
            raise ConfigError(f"--node-limit must be at least 1, got {node_limit}")
        if time_limit is not None and (not math.isfinite(time_limit) or time_limit <= 0):
            raise ConfigError(f"--time-limit must be a positive number of seconds, got {time_limit:g}", hint="e.g. --time-limit 30")
        from ..patterns.methods import method_keys

        if method is not None and method not in method_keys():
            raise ConfigError(f"unknown --method {method!r}", hint=f"valid methods: {', '.join(method_keys())}")
        if emit_to is not None and emit is None:
            raise ConfigError("--emit-to needs --emit (env, rankfile or slurm)")
        host_list = [h.strip() for h in hosts.split(",")] if hosts is not None else None
        if host_list is not None and (not all(host_list) or len(set(host_list)) != len(host_list)):
            raise ConfigError(f"--hosts {hosts!r}: host names must be non-empty and distinct")
        if host_list is not None and len(host_list) < nodes:
            raise ConfigError(f"--hosts names {len(host_list)} host(s) for --nodes {nodes}")
        emit_target = emit_to if emit_to is not None or emit not in ("rankfile", "rankfile-logical", "sbatch") \
            else Path("job.sbatch" if emit == "sbatch" else "rankfile")
        if emit == "env" and emit_target is None:
            emit_target = Path("linkscope-env")
        check_paths(inputs={"TRAFFIC": traffic, "--from": from_file, "--results": results},
                    outputs={"--output": output, "--json": json_path, "--emit-to": emit_target if emit != "env" else None},
                    output_dirs={"--emit-to": emit_target if emit == "env" else None})
        matrix = load_traffic(traffic)
        if nodes > matrix.ranks:
            raise ConfigError(f"--nodes {nodes} is more nodes than the traffic has ranks ({matrix.ranks})",
                              hint="a node would hold no rank")
        err = stderr_console()
        topology = None
        nic_choice = nic
        if results is None or preset or from_file or synthetic:
            topology = resolve_topology_cli(preset, from_file, synthetic, gpu_model=gpu_model, allow_fallback=False)
            topology, nic_choice = with_nic_option(topology, nic)
            from ..model.budget import check_budget, estimate_map_bytes  # a memory estimate before mapping

            check_budget(estimate_map_bytes(topology.gpu_count * nodes),
                         f"map of {matrix.ranks:,} ranks onto {nodes} x {topology.name} ({topology.gpu_count * nodes:,} GPUs)",
                         hint="map onto a smaller fabric")
            known = emitters.known_host_name(topology) if host_list is None and nodes == 1 else None
            if known is not None:
                host_list = [known]  # this machine's (or the recorded machine's) name, not "localhost"
        measured = None
        if results is not None:
            measured = results_cost(_load_results(results), metric,
                                    gpus=topology.gpu_count if topology is not None else None,
                                    source=f"results:{results.name}")
        assignment = map_onto(matrix, topology, metric, method=DEFAULT_METHOD.key if method is None else method,
                              results_cost=measured, nodes=nodes, hosts=host_list, solver=solver, mode=mode,
                              node_limit=node_limit, time_limit_s=time_limit, nics=nic_choice)
        # the vendor's device numbers against this node (AMD: HIP ordinals against the KFD table)
        assignment = emitters.check_devices(assignment, topology.gpu_count if topology is not None else None)
        for note_text in assignment.notes[1:] if assignment.uniform else assignment.notes:
            err.print(f"note: {note_text}", style="yellow")
        if output is not None:
            save_assignment(assignment, output)
            if str(output) == STDOUT:  # -o -: stdout holds the mapping JSON alone
                return
            err.print(f"wrote {output}", markup=False)
        if emit is not None:
            _emit(emitters, emit, emit_target, assignment, host_list, err)
        if write_json_output(json_path, json.dumps(to_dict(assignment), indent=2)):
            return
        console = stdout_console()
        if assignment.mode == "reorder":
            console.print(f"new rank of each process (MPI_Comm_split key): {list(assignment.new_rank_of_rank or ())}")
        else:
            console.print(f"gpu_of_rank: {list(assignment.gpu_of_rank)}")
        if assignment.host_of_rank is not None:
            console.print(f"hosts used: {len(set(assignment.host_of_rank))}")
        if nic_choice is not None and assignment.nics_of_rank:
            sets = "leaves UCX_NET_DEVICES / NCCL_IB_HCA unset" if assignment.nic_choice == "any" \
                else "sets UCX_NET_DEVICES / NCCL_IB_HCA"
            console.print(f"NIC choice: {assignment.nic_choice} (nics_of_rank in the mapping JSON; launch {sets})",
                          markup=False)
        if assignment.exchange_time_us is not None and assignment.default_exchange_time_us is not None:
            console.print(f"predicted exchange time (fabric model, method {method or DEFAULT_METHOD.key}, contention included): "
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
