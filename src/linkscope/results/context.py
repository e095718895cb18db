"""The context of a run: where and with what it ran (RunRecord.context).

Every probe is guarded: a library that is missing or fails gives a short error string in place of
its version, never an exception. Environment variables are passed in (the CLI owns os.environ);
only the variables that change transfer behaviour are kept, not the whole environment.
"""
from __future__ import annotations

import platform
import re
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import platforms

#: Exact names kept from the environment.
ENV_NAMES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUPY_CACHE_DIR",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HSA_ENABLE_SDMA",
    "HSA_FORCE_FINE_GRAIN_PCIE",
    "GPU_MAX_HW_QUEUES",
    "OMP_NUM_THREADS",
    "SLURM_JOB_ID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
)
#: Prefixes kept from the environment (NCCL, UCX, MPI implementations, libfabric, Cray MPICH).
ENV_PREFIXES = ("NCCL_", "UCX_", "OMPI_MCA_", "OMPI_COMM_WORLD_", "MPICH_", "FI_", "PMIX_RANK", "I_MPI_", "MV2_",
                "HSA_", "HIP_", "ROCR_", "ROC_", "RCCL_")
#: Launcher-internal variables under those prefixes: Open MPI's plumbing, not behaviour.
ENV_EXCLUDED_PREFIXES = ("OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_",
                         "OMPI_MCA_rmaps_base_oversubscribe", "OMPI_MCA_mpi_oversubscribe")
_SECRET = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL)", re.IGNORECASE)


def selected_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that change behaviour, sorted by name; never anything that looks like a secret.

    >>> selected_env({"NCCL_NVLS_ENABLE": "0", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "1,0"})
    {'CUDA_VISIBLE_DEVICES': '1,0', 'NCCL_NVLS_ENABLE': '0'}
    """
    out = {}
    for name in sorted(env):
        if _SECRET.search(name) or name.startswith(ENV_EXCLUDED_PREFIXES):
            continue
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES):
            out[name] = str(env[name])
    return out


def _guard(probe: Callable[[], Any]) -> Any:
    try:
        return probe()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"unavailable ({type(exc).__name__}{': ' + text[:120] if text else ''})"


def _mpi4py_version() -> str:
    import mpi4py

    return str(mpi4py.__version__)


def _version_probe(ref: str) -> Callable[[], str]:
    def probe() -> str:
        return str(platforms.load(ref)())
    return probe


def library_versions(probe_vendor: bool = True) -> dict[str, str]:
    """Versions of Python and of the libraries linkscope drives; an error string where unavailable."""
    from .. import __version__

    versions = {"linkscope": __version__, "python": platform.python_version()}
    if probe_vendor:
        for p in platforms.PLATFORMS:  # each vendor's probes, named by the platform table
            for key, ref in p.version_probes:
                versions[key] = _guard(_version_probe(ref))
    versions["mpi4py"] = _guard(_mpi4py_version)
    return versions


def collect_context(
    env: Mapping[str, str],
    *,
    gpu_names: Sequence[str] = (),
    engine: str | None = None,
    topology_source: str | None = None,
    probe_vendor: bool = True,
) -> dict[str, Any]:
    """The RunRecord context: host, OS, Python, versions, GPU names, engine, selected env vars.

    ``probe_vendor=False`` skips the vendor libraries (for a simulated run on a machine without them).
    """
    return {
        "host": _guard(socket.gethostname),
        "os": _guard(lambda: f"{platform.system()} {platform.release()}"),
        "platform": _guard(platform.platform),
        "python_implementation": platform.python_implementation(),
        "argv0": sys.argv[0] if sys.argv else "",
        "versions": library_versions(probe_vendor),
        "gpus": list(gpu_names),
        "engine": engine,
        "topology_source": topology_source,
        "env": selected_env(env),
    }
