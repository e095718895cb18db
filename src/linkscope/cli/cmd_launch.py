"""``linkscope launch``: run one rank of a job on the GPU, NIC and cores a mapping chose."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from ..errors import UserError
from .common import stderr_console


def register(app: typer.Typer) -> None:
    @app.command(
        "launch",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def launch_command(
        command: list[str] = typer.Argument(..., help="The program to run, after --."),
        mapping: Path = typer.Option(..., "--mapping", help="A mapping JSON from linkscope map -o."),
        bind: bool = typer.Option(True, "--bind/--no-bind", help="Bind to the mapping's cores (sched_setaffinity)."),
        nic: str | None = typer.Option(
            None, "--nic",
            help="Override the mapping's NIC(s) for this rank, as UCX_NET_DEVICES / NCCL_IB_HCA name them: mlx5_0, "
                 "mlx5_0,mlx5_1 (spread), ^mlx5_1 (the node's others), nearest, any (leave both unset: the library "
                 "picks). Names are checked against the NICs the mapping lists for the rank's node."),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Print what is set on stderr."),
    ) -> None:
        """Set CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, UCX_NET_DEVICES, NCCL_IB_HCA and the CPU
        binding for this rank (AMD: the GPU found by PCI address, numbered among those an inherited
        ROCR_VISIBLE_DEVICES leaves) (from OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, PMI_LOCAL_RANK,
        SLURM_LOCALID or LOCAL_RANK), then exec the program.

        Example: mpirun -n 8 linkscope launch --mapping mapping.json -- ./app ;
        mpirun -n 8 linkscope launch --mapping mapping.json --nic mlx5_1 -- ./app
        """
        from ..mapping.assignment import load_assignment
        from ..mapping.emit import launch_plan, node_device_table, size_mismatch

        _check_program(command)
        assignment = load_assignment(mapping)
        plan = launch_plan(assignment, os.environ, nic, live_gpus=node_device_table(assignment))
        mismatch = size_mismatch(assignment, os.environ)
        if mismatch and plan.rank == 0:  # once per job (per node for a one-node mapping), not once per rank
            stderr_console().print(f"warning: {mismatch}", style="yellow", markup=False)
        env = _rank_environment(plan, mapping)
        err = stderr_console()
        if bind and plan.cores:
            _bind(plan, err)
        if verbose:
            shown = " ".join(f"{k}={v}" for k, v in plan.env.items())
            err.print(f"rank {plan.rank} ({plan.rank_source}): {shown}", markup=False)
        if plan.device_says and (verbose or any(v in os.environ for v in
                                                ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"))):
            # an inherited visibility variable renumbers the GPUs: say what this rank's index means
            err.print(f"rank {plan.rank}: {plan.device_says}; HIP_VISIBLE_DEVICES={plan.env['HIP_VISIBLE_DEVICES']}",
                      markup=False)
        _exec(command, env)


def _check_program(command: list[str]) -> None:
    """A program that cannot run is refused before the mapping is read."""
    import shutil

    if not command or not command[0]:
        raise UserError("no program to launch", hint="linkscope launch --mapping mapping.json -- ./app")
    if shutil.which(command[0], path=os.environ.get("PATH")) is None:
        if "/" in command[0] and Path(command[0]).is_file():
            raise UserError(f"cannot run {command[0]}: not executable",
                            hint=f"chmod +x {command[0]}, or name its interpreter: -- python3 {command[0]}")
        raise UserError(f"command not found: {command[0]}")


def _rank_environment(plan, mapping: Path) -> dict[str, str]:
    """This process's environment with the plan's variables set and its unset ones removed."""
    for var, value in plan.env.items():  # the mapping's schema refuses these; never exec with one
        if not value.isprintable():
            raise UserError(f"{mapping}: {var}={value[:60]!r} holds a control character or line break; "
                            "not launching with it")
    env = dict(os.environ)
    for var in plan.unset:
        env.pop(var, None)
    env.update(plan.env)
    return env


def _bind(plan, err) -> None:
    cores = set(plan.cores) & os.sched_getaffinity(0)
    if cores:
        os.sched_setaffinity(0, cores)
    else:
        err.print(f"warning: rank {plan.rank}: the mapping's cores {plan.env.get('LINKSCOPE_CPUS')} are not "
                  "available here; not binding", style="yellow")


def _exec(command: list[str], env: dict[str, str]) -> None:
    sys.stdout.flush()
    try:
        os.execvpe(command[0], list(command), env)
    except FileNotFoundError:
        raise UserError(f"command not found: {command[0]}") from None
    except PermissionError:
        raise UserError(f"cannot run {command[0]}: permission denied (not executable?)",
                        hint=f"chmod +x {command[0]}, or name its interpreter: -- python3 {command[0]}") from None
    except OSError as exc:
        raise UserError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
