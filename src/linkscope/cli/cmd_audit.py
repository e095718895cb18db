"""``linkscope audit -- LAUNCHER ARGS...``: is this job placed well? (``comm.audit``)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from ..atomic import check_paths
from ..errors import UserError
from . import EXIT_WITH_ERRORS
from .common import STDOUT, json_option, stderr_console, stdout_console, write_json_output
from .topoinput import TopologyInput, from_option, gpu_model_option, preset_option, synthetic_option


def register(app: typer.Typer) -> None:
    @app.command("audit", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def audit_command(
        command: list[str] = typer.Argument(..., help="The launcher and its options, after --."),
        preset: str | None = preset_option("Judge against a shipped preset topology."),
        from_file: Path | None = from_option(),
        synthetic: str | None = synthetic_option("Judge against a synthetic topology."),
        gpu_model: str | None = gpu_model_option(),
        gpus: str = typer.Option(
            "auto", "--gpus",
            help="Which GPU each rank uses where the probe cannot see GPUs (no NVIDIA driver): auto (NVML, else "
                 "CUDA_VISIBLE_DEVICES, else the local rank; AMD: ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES "
                 "applied as HIP applies them to the rank's KFD table), env (CUDA_VISIBLE_DEVICES entries as "
                 "topology GPU numbers; AMD: as auto), local (the local rank), or one topology GPU number per "
                 "rank: 0,4,2,2."),
        json_path: str | None = json_option("the audit"),
        folder: Path | None = typer.Option(
            None, "--dir", help="Folder in which audit creates a new folder for the ranks' records (shared by every "
                                "host; kept, and named at the end; nothing already there is touched). Default: a new "
                                "folder in the current directory, removed afterwards."),
        timeout: float | None = typer.Option(
            None, "--timeout", help="Give up on the launcher after this many seconds: its whole process group (the "
                                    "launcher, its ranks and their children) is ended, SIGTERM then SIGKILL."),
    ) -> None:
        """Run a tiny probe as every rank under your launcher and judge what each rank got (CPUs, NUMA
        node, memory policy, GPU, NIC variables) against the topology: GPU-CPU NUMA distance, ranks
        sharing a GPU or a core, a NIC far from its GPU; each problem with its cost (simulated from the
        topology and the fabric model) and the launcher options or linkscope map/launch that fix it.

        Example: linkscope audit --preset dgx-h100 -- mpirun -n 8 --bind-to core ;
        linkscope audit --preset dgx-h100 --gpus local -- srun -N 2 --ntasks-per-node 8
        """
        from ..comm.audit import audit, check_timeout
        from ..mapping.cluster import node_topology, split_hosts

        if not command or not command[0]:
            raise UserError("no launcher command to audit", hint="linkscope audit --preset dgx-h100 -- mpirun -n 8")
        check_timeout(timeout)  # before the topology is resolved: a bad number fails first
        check_paths(inputs={"--from": from_file}, outputs={"--json": json_path})
        choice = TopologyInput(preset, from_file, synthetic, gpu_model)
        topology = choice.resolve(allow_fallback=True)
        if len(split_hosts(topology).gpus) > 1:
            topology = node_topology(topology)  # every host of the job is judged as one node of it
        report, launched = audit(list(command), topology, os.environ, gpus=gpus, folder=folder,
                               topology_option=choice.flag(topology.name), timeout_s=timeout)
        if json_path != STDOUT:  # with --json - stdout holds the JSON alone
            out = stdout_console()
            out.print(f"audit of {' '.join(command)} against {report.topology} ({report.launcher}): "
                      f"{len(report.ranks)} ranks on {len({v.host for v in report.ranks})} host(s)", markup=False)
            for v in report.ranks:
                out.print(f"  rank {v.rank:>4} {v.host} local {v.local_rank if v.local_rank is not None else '?'}: "
                          f"GPU {v.gpu if v.gpu is not None else '?'} ({v.gpu_source}), CPUs "
                          f"{_cpus(v.cpus)} on {','.join(v.cpu_devices) or '?'} (GPU's: {v.gpu_cpu or '?'})"
                          + (f", {v.nic_var}: {','.join(v.nics)}" if v.nic_var else ""), markup=False)
            if not report.problems:
                out.print("no placement problem found", markup=False)
            for p in report.problems:
                out.print(f"PROBLEM {p.kind}: {p.what}", markup=False)
                out.print(f"  cost: {p.cost}", markup=False)
                for line in p.fix:
                    out.print(f"  fix: {line}", markup=False)
        err = stderr_console()
        for note in report.notes:
            err.print(f"note: {note}", markup=False)
        write_json_output(json_path, json.dumps({**report.to_dict(), "launcher_status": launched.status},
                                                indent=2, allow_nan=False))
        failure = launched.failure()
        if failure is not None:  # the records were judged, but the job did not run as asked
            err.print(f"linkscope: error: {failure}", markup=False)
            raise typer.Exit(EXIT_WITH_ERRORS)


def _cpus(cpus: tuple[int, ...]) -> str:
    from ..report.topology_view import format_cpu_list

    return format_cpu_list(list(cpus)) or "?"
