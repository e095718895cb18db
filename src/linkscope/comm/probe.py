"""The placement probe: what one rank of a job really got from its launcher.

``python -m linkscope.comm.probe DIR`` runs as every rank of the launcher command that
``linkscope audit`` builds, and writes ``DIR/rank-<R>.json`` (R: the world rank from the launcher's
variables, ``rankenv``; the process id where none is set) with:

* host name, process id, the rank variables the launcher set (``rankenv.rank_variables``);
* the CPU set (``sched_getaffinity``), each CPU's SMT siblings and NUMA node (sysfs), the memory
  policy (``Mems_allowed_list`` and the policies of ``/proc/self/numa_maps``);
* visible GPUs: the ``*_VISIBLE_DEVICES`` variables, and the GPUs NVML lists with UUID and PCI
  bus id (nvidia-ml-py, where a driver is present; NVML does not apply CUDA_VISIBLE_DEVICES, so the
  audit resolves those entries against this list); on AMD nodes the KFD table this rank sees
  (``hipdevices.read_kfd_gpus``: the GPUs whose render node it can open, in the order ROCr numbers
  them, with PCI address and unique id) and the ROCm version (``$ROCM_PATH/.info/version``: HIP
  takes ``GPU-`` tokens in HIP_VISIBLE_DEVICES from 6.2), from which the audit applies HIP's rules;
* the NIC variables (UCX_NET_DEVICES, NCCL_IB_HCA, NCCL_SOCKET_IFNAME, ...);
* where a GPU is usable through the device runtime (CuPy): a quick host-to-GPU and GPU-to-host
  copy of ``MEASURE_BYTES`` from pinned memory this rank allocated (so on the NUMA node its CPUs
  and memory policy give it), timed with device events, best of ``MEASURE_REPS``, on the device
  it would use (local rank modulo the devices it sees).

No transport of its own: the ranks share a directory (a shared file system across hosts, as
``profile`` needs for its rows). Nothing here needs a GPU, MPI or root.
"""
from __future__ import annotations

import os
import socket
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic
from ..discovery.hipdevices import KfdGpu, kfd_facts, read_kfd_gpus
from ..discovery.sysfs import parse_cpulist
from ..errors import UserError
from ..patterns.methods import D2H, H2D
from ..rankenv import LOCAL_RANK_VARS, WORLD_RANK_VARS, first_index, rank_variables
from ..userschema import List, Number, Record, Text

FORMAT = "linkscope.audit-probe"
VERSION = 1

_RANK = Number(0, 1 << 24, integer=True, null=True)
_CPU = Number(0, 1 << 20, integer=True)
_NODE = Number(-1, 1 << 16, integer=True)
_GB_PER_S = Number(0, 1e5, null=True)
PROBE_RECORD = Record(
    fields={
        "format": Text(choices=(FORMAT,)),
        "host": Text(max_len=256),
        "pid": Number(0, 1 << 32, integer=True, null=True),
        "world_rank": _RANK,
        "local_rank": _RANK,
        "rank_env": Record(values=Text(max_len=256)),
        "cpus": List(_CPU, max_len=1 << 20),
        "smt_siblings": Record(values=List(_CPU, max_len=1024)),
        "numa_of_cpu": Record(values=_NODE),
        "machine_cpus": Number(0, 1 << 20, integer=True, null=True),
        "machine_numa_nodes": List(_NODE, max_len=1 << 16, null=True),
        "memory": Record(fields={"mems_allowed": List(_NODE, max_len=1 << 16, null=True)}, null=True),
        "visible_env": Record(values=Text(max_len=4096)),
        "gpus": List(Record(fields={"nvml_index": Number(0, 1 << 16, integer=True, null=True),
                                    "uuid": Text(max_len=256, null=True), "pci_bus_id": Text(max_len=64, null=True)}),
                     max_len=1 << 16, null=True),
        "nic_env": Record(values=Text(max_len=4096)),
        "copies": Record(fields={"ordinal": Number(0, 1 << 16, integer=True, null=True),
                                 "size_bytes": Number(0, 2.0**50, integer=True, null=True),
                                 "reps": Number(0, 1 << 20, integer=True, null=True)},
                         values=_GB_PER_S, null=True),
    },
    required=("format", "host", "world_rank", "cpus"))
"""What a rank's probe record must hold before audit judges it (a hand-made or damaged record such as
``"world_rank": "abc"`` or ``"cpus": ["x"]`` is one line naming its JSON path)."""
VISIBLE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                "GPU_DEVICE_ORDINAL")
NIC_VARS = ("UCX_NET_DEVICES", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "UCX_TLS", "NCCL_NET", "NCCL_IB_DISABLE",
            "OMPI_MCA_btl_tcp_if_include", "FI_PROVIDER")
SYS = Path("/sys/devices/system")
MEASURE_BYTES = 64 << 20
MEASURE_REPS = 5


def parse_cpu_list(text: str) -> list[int]:
    """A Linux cpulist (``discovery.sysfs.parse_cpulist``), sorted; empty when malformed.

    >>> parse_cpu_list("8,0-2, 10-11")
    [0, 1, 2, 8, 10, 11]
    """
    try:
        return sorted(set(parse_cpulist(text)))
    except UserError:
        return []


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def numa_of_cpus(root: Path = SYS) -> dict[int, int]:
    """Logical CPU -> NUMA node, from ``node/node*/cpulist``."""
    out: dict[int, int] = {}
    for node_dir in sorted((root / "node").glob("node[0-9]*")):
        text = _read(node_dir / "cpulist")
        if text is not None:
            for cpu in parse_cpu_list(text):
                out[cpu] = int(node_dir.name[4:])
    return out


def siblings_of(cpus: list[int], root: Path = SYS) -> dict[int, list[int]]:
    """Each CPU's SMT siblings (itself included), from ``cpu/cpuN/topology/thread_siblings_list``."""
    out: dict[int, list[int]] = {}
    for cpu in cpus:
        text = _read(root / "cpu" / f"cpu{cpu}" / "topology" / "thread_siblings_list")
        out[cpu] = parse_cpu_list(text) if text else [cpu]
    return out


def memory_policy(proc: Path = Path("/proc/self")) -> dict[str, Any]:
    """``Mems_allowed_list`` and the policies of this process's mappings (numa_maps' second field,
    e.g. ``default``, ``bind:1``, ``interleave:0-1``) with how many mappings have each."""
    allowed: list[int] = []
    status = _read(proc / "status") or ""
    for line in status.splitlines():
        if line.startswith("Mems_allowed_list:"):
            allowed = parse_cpu_list(line.split(":", 1)[1])
    policies: Counter[str] = Counter()
    for line in (_read(proc / "numa_maps") or "").splitlines():
        fields = line.split()
        if len(fields) >= 2:
            policies[fields[1]] += 1
    return {"mems_allowed": allowed, "policies": dict(policies.most_common())}


def nvml_gpus() -> tuple[list[dict[str, Any]], str]:
    """The GPUs NVML lists (index, UUID, PCI bus id), or ``([], why not)``."""
    try:
        import pynvml
    except ImportError:
        return [], "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...: no NVIDIA driver here
        return [], f"NVML unavailable: {exc}"
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
            out.append({"nvml_index": i, "uuid": uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                        "pci_bus_id": (bus.decode() if isinstance(bus, bytes) else str(bus)).lower()})
        return out, ""
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def measure_copies(runtime: Any, ordinal: int, size_bytes: int = MEASURE_BYTES, reps: int = MEASURE_REPS
                   ) -> dict[str, Any]:
    """Best-of-``reps`` pinned host-to-device and device-to-host copy rates (GB/s) on ``ordinal``,
    timed with device events on one stream (``runtime``: a ``DeviceRuntime``)."""
    host = runtime.host_alloc(size_bytes)
    device = runtime.malloc(ordinal, size_bytes)
    stream = runtime.stream(ordinal)
    out: dict[str, Any] = {"ordinal": ordinal, "size_bytes": size_bytes, "reps": reps}
    try:
        for name, dst, src in ((H2D.key, device, host), (D2H.key, host, device)):
            best = float("inf")
            for _ in range(reps):
                start, end = runtime.event_create(ordinal), runtime.event_create(ordinal)
                runtime.event_record(start, stream)
                runtime.memcpy_async(ordinal, dst, src, size_bytes, stream)
                runtime.event_record(end, stream)
                best = min(best, runtime.event_elapsed_s(start, end))
                runtime.event_destroy(start)
                runtime.event_destroy(end)
            out[f"{name}_gb_per_s"] = size_bytes / best / 1e9
    finally:
        runtime.free(ordinal, device)
        runtime.free_host(host)
    return out


def _measure(local_rank: int | None, runtime: Any = None) -> tuple[dict[str, Any] | None, str]:
    """The copy measurement on this rank's device, or (None, why not)."""
    if runtime is None:
        from ..engines.gpu.runtime import CupyRuntime
        from ..errors import BackendUnavailable

        try:
            runtime = CupyRuntime("cuda")
        except BackendUnavailable as exc:
            return None, exc.one_line()
    count = runtime.device_count()
    if count < 1:
        return None, "no device visible"
    try:
        return measure_copies(runtime, (local_rank or 0) % count), ""
    except Exception as exc:  # a rank's GPU failing must not lose its placement record
        return None, f"copy measurement failed: {exc}"


def probe(environ: dict[str, str] | None = None, root: Path = SYS, proc: Path = Path("/proc/self"),
          with_nvml: bool = True, measure: bool = True, runtime: Any = None,
          kfd: Callable[[], list[KfdGpu] | None] = read_kfd_gpus) -> dict[str, Any]:
    """What this process got (see the module doc), as a JSON-ready dict. ``kfd``: reads the KFD
    table this process sees (None where there is none: not an AMD node)."""
    from ..engines.rocm.install import rocm_version

    env = dict(os.environ) if environ is None else environ
    kfd_gpus = kfd()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    numa = numa_of_cpus(root)
    world = first_index(env, WORLD_RANK_VARS)
    local = first_index(env, LOCAL_RANK_VARS)
    gpus, why = nvml_gpus() if with_nvml else ([], "not asked")
    copies, copies_note = _measure(None if local is None else local[0], runtime) if measure else (None, "not asked")
    return {
        "format": FORMAT,
        "version": VERSION,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "world_rank": None if world is None else world[0],
        "world_rank_var": None if world is None else world[1],
        "local_rank": None if local is None else local[0],
        "local_rank_var": None if local is None else local[1],
        "rank_env": rank_variables(env),
        "cpus": cpus,
        "smt_siblings": {str(c): s for c, s in siblings_of(cpus, root).items()},
        "numa_of_cpu": {str(c): numa[c] for c in cpus if c in numa},
        "machine_cpus": len(numa) or os.cpu_count() or 0,
        "machine_numa_nodes": sorted(set(numa.values())),
        "memory": memory_policy(proc),
        "visible_env": {v: env[v] for v in VISIBLE_VARS if v in env},
        "gpus": gpus,
        "gpus_note": why,
        "kfd_gpus": kfd_facts(kfd_gpus),
        "rocm_version": rocm_version(Path(env.get("ROCM_PATH") or "/opt/rocm")) if kfd_gpus is not None else None,
        "nic_env": {v: env[v] for v in NIC_VARS if v in env},
        "copies": copies,
        "copies_note": copies_note,
    }


def write_probe(folder: Path, record: dict[str, Any]) -> Path:
    rank = record["world_rank"]
    name = f"rank-{rank}.json" if rank is not None else f"pid-{record['host']}-{record['pid']}.json"
    path = Path(folder) / name
    write_json_atomic(path, record)
    return path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m linkscope.comm.probe DIR\n")
        return 2
    write_probe(Path(argv[0]), probe())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
