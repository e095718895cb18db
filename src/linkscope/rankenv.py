"""The rank-environment reader: which launcher variables say who this process is (one list).

Launchers tell each process its rank through environment variables: Open MPI (``OMPI_COMM_WORLD_*``),
MPICH/Hydra and Intel MPI (``PMI_*``, ``MPI_LOCALRANKID``), PMIx, MVAPICH2, Cray PALS, Slurm's srun
(``SLURM_*``) and torchrun (``RANK``, ``LOCAL_RANK``). Every command that needs its rank (the comm
runners, ``launch``, the CLI's rank-0-only error printing) reads them here, in this order.

>>> world_rank_from_env({"SLURM_PROCID": "3"})
3
>>> local_rank_from_env({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "SLURM_LOCALID": "3"})
1
>>> launched_by_mpi({}), launched_by_mpi({"PMI_RANK": "0"})
(False, True)
"""
from __future__ import annotations

from collections.abc import Mapping

LAUNCHER_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "PALS_SIZE")
"""Set by Open MPI, MPICH/Hydra/Slurm PMI, PMIx, Intel MPI, Cray PALS: an MPI launcher started us."""
LAUNCHER_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "PALS_RANKID")
"""World-rank variables that only an MPI launcher sets."""
WORLD_RANK_VARS = LAUNCHER_RANK_VARS + ("SLURM_PROCID", "RANK")
"""This process's rank in the whole job (MPI launchers, then srun, then torchrun)."""
LOCAL_RANK_VARS = (
    "OMPI_COMM_WORLD_LOCAL_RANK",  # Open MPI
    "MPI_LOCALRANKID",  # MPICH Hydra, Intel MPI
    "PMI_LOCAL_RANK",  # some PMI launchers
    "MV2_COMM_WORLD_LOCAL_RANK",  # MVAPICH2
    "PALS_LOCAL_RANKID",  # Cray PALS
    "SLURM_LOCALID",  # srun
    "LOCAL_RANK",  # torchrun and friends
)
"""This process's rank on its host."""
WORLD_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "PALS_SIZE", "SLURM_NTASKS", "WORLD_SIZE")
"""The number of ranks in the job (MPI launchers, then srun, then torchrun)."""
LOCAL_SIZE_VARS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE")
"""The number of ranks on this host, where the launcher says it."""


def first_index(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[int, str] | None:
    """(value, variable) of the first of ``names`` set to a non-negative integer, else None."""
    for name in names:
        value = environ.get(name)
        if value is not None and value.strip().isascii() and value.strip().isdigit():
            return int(value), name
    return None


def launched_by_mpi(environ: Mapping[str, str]) -> bool:
    """True when an MPI launcher (mpirun, mpiexec, srun with PMI) started this process."""
    return any(environ.get(name) for name in LAUNCHER_SIZE_VARS + LAUNCHER_RANK_VARS)


def world_rank_from_env(environ: Mapping[str, str]) -> int | None:
    found = first_index(environ, WORLD_RANK_VARS)
    return None if found is None else found[0]


def local_rank_from_env(environ: Mapping[str, str]) -> int | None:
    found = first_index(environ, LOCAL_RANK_VARS)
    return None if found is None else found[0]


def world_size_from_env(environ: Mapping[str, str]) -> int | None:
    found = first_index(environ, WORLD_SIZE_VARS)
    return None if found is None else found[0]


def rank_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """Every rank, size and local-rank variable of the lists above that is set (what a launcher
    told this process), in list order.

    >>> rank_variables({"SLURM_PROCID": "3", "HOME": "/root", "SLURM_LOCALID": "1"})
    {'SLURM_PROCID': '3', 'SLURM_LOCALID': '1'}
    """
    names = dict.fromkeys(WORLD_RANK_VARS + LOCAL_RANK_VARS + WORLD_SIZE_VARS + LOCAL_SIZE_VARS + LAUNCHER_SIZE_VARS)
    return {name: environ[name] for name in names if name in environ}
