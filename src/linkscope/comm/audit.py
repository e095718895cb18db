"""``linkscope audit``: run the placement probe (``comm.probe``) under the site's own launcher and
judge what every rank got against the topology.

Problems named (each with its cost and the fix):

* ``gpu-shared``: two or more ranks of one host on one GPU;
* ``core-shared``: ranks of one host whose CPU sets share a physical core (SMT siblings counted),
  an unbound rank (every CPU of the machine) among them;
* ``numa-far``: a rank's CPUs on another NUMA node than its GPU's (all of them, or some: a rank
  spread over NUMA nodes); ``memory-far``: its memory bound to another node;
* ``nic-far``: the NIC its UCX_NET_DEVICES / NCCL_IB_HCA names is farther from its GPU than the
  nearest one.

Costs: a rank's transfers along the route that the topology gives (bottleneck GB/s and summed link
latency, CPU -> GPU or GPU -> NIC), and for a shared GPU the fabric model's prediction of k
concurrent host-to-GPU copies against one alone: **simulated** (from the topology and the model).
Where the probe could use the GPU (CuPy), a rank on the wrong NUMA node also shows its own
**measured** pinned copy rates, beside a rank of the same host on the GPU's node.

Fixes: the launcher's own options (Open MPI / MPICH mpirun, Slurm srun, torchrun), the per-rank
values (cores, NIC) that are right, and the ``linkscope map`` + ``linkscope launch`` pair that
sets them.

Which GPU a rank uses: the GPUs it sees (NVML's list filtered by CUDA_VISIBLE_DEVICES, matched to
the topology by UUID, else PCI bus id); one of several by local rank (as most frameworks pick);
without a driver, ``gpus`` chooses (``env``: CUDA_VISIBLE_DEVICES entries as topology GPU numbers;
``local``: the local rank; ``0,4,2,2``: per world rank). On AMD (a topology of AMD GPUs, or a
probe that read a KFD table and no NVML GPU) the rank's ROCR_VISIBLE_DEVICES, then
HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) are applied as ROCr and HIP apply them
(``discovery.hipdevices``) to the KFD table the rank recorded, and the GPU found is matched to the
topology by PCI bus id; without a recorded table, to the topology's GPUs in HIP order
(``hip_ordinal``), which the rank's ``gpu_source`` says was assumed.
"""
from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import platforms
from ..errors import UserError
from ..model.nics import choice_in_environment, choose_from, parse_nic_spec
from ..patterns.methods import CE
from ..procwait import signals_held, wait_in_slices
from ..report.topology_view import format_cpu_list
from ..topology import query
from ..topology.model import Device, DeviceKind, Topology
from ..userfiles import loads_strict, read_text
from ..userschema import validate
from .probe import FORMAT, PROBE_RECORD

PROBE_MODULE = "linkscope.comm.probe"
LAUNCHERS = ("ompi", "hydra", "srun", "torchrun", "other")
SHARED_COPY_BYTES = 64 << 20
"""Size of each host-to-GPU copy in the shared-GPU prediction."""


# ---- running the probe -------------------------------------------------------------------------------
def launcher_kind(command: Sequence[str]) -> str:
    """``ompi``, ``hydra`` (MPICH, Intel MPI), ``srun``, ``torchrun`` or ``other`` from the command."""
    name = Path(command[0]).name if command else ""
    if name in ("torchrun", "torch.distributed.run"):
        return "torchrun"
    if name == "srun":
        return "srun"
    if name in ("mpirun", "mpiexec", "orterun", "prterun", "mpiexec.hydra"):
        from ..traffic.capture import detect_launcher

        kind = detect_launcher(command)
        return kind if kind in ("ompi", "hydra") else "ompi" if name in ("orterun", "prterun") else "hydra"
    return "other"


def probe_command(command: Sequence[str], folder: Path, python: str = sys.executable) -> list[str]:
    """The launcher command with the probe appended as its program (torchrun: ``--no-python``,
    since it otherwise runs a script with its own Python)."""
    if not command:
        raise UserError("no launcher command to audit", hint="linkscope audit --preset dgx-h100 -- mpirun -n 8")
    probe = [python, "-m", PROBE_MODULE, str(folder)]
    if launcher_kind(command) == "torchrun":
        return [*command, "--no-python", *probe]
    return [*command, *probe]


@dataclass(frozen=True)
class LauncherResult:
    """How the launcher ended: its exit status (negative: killed by that signal, as ``subprocess``
    reports it), the last lines it wrote to stderr, and whether audit ended it (``timeout``)."""

    status: int
    stderr_tail: tuple[str, ...] = ()
    timed_out: bool = False

    def failure(self) -> str | None:
        """One sentence when the launcher failed, with its last stderr line; None when it exited 0."""
        if self.status == 0 and not self.timed_out:
            return None
        how = (f"was killed by {signal.Signals(-self.status).name}" if self.status < 0 and
               -self.status in signal.Signals._value2member_map_ else f"exited with status {self.status}")
        last = next((line for line in reversed(self.stderr_tail) if line.strip()), "")
        return f"the launcher {how}" + (f": {last.strip()[:300]}" if last else "")


STDERR_TAIL_LINES = 20
"""Lines of the launcher's stderr kept for the report (it is shown live as well)."""
UNKNOWN_GPU = "unknown"  # how a rank's GPU was found when nothing told
STOP_GRACE_S = 5.0
"""Seconds the launcher's process group gets between SIGTERM and SIGKILL (mpirun forwards SIGTERM to
its ranks and waits for them; a few seconds lets it, and a launcher that ignores SIGTERM gets KILL)."""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its user (setuid): still there
        return True
    return True


def end_process_group(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S,
                      clock: Callable[[], float] = time.monotonic) -> None:
    """End every process of ``proc``'s group (the launcher ran as a session leader, so its group holds
    its ranks and anything they started): SIGTERM, then SIGKILL to whatever is left after ``grace_s``."""
    pgid = proc.pid
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = clock() + wait_s
        while clock() < deadline:
            proc.poll()  # reap the launcher, so its zombie does not keep the group alive
            if not _group_alive(pgid):
                break
            time.sleep(0.02)
        else:
            continue
        break
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot end (D state)
        pass


def _pump(stream: Any, sink: Any, tail: deque[str]) -> None:
    """Copy the launcher's stderr to ours line by line, keeping the last lines."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        tail.append(line.rstrip("\n"))
        try:
            sink.write(line)
            sink.flush()
        except (OSError, ValueError):
            pass
    stream.close()


def check_timeout(timeout_s: float | None) -> None:
    """Refuse a ``--timeout`` that is not a positive, finite number of seconds (nan, inf, 0, -1)."""
    if timeout_s is not None and not (math.isfinite(timeout_s) and timeout_s > 0):
        raise UserError(f"--timeout {timeout_s:g}: expected a positive number of seconds")


def run_probe(command: Sequence[str], folder: Path, environ: Mapping[str, str], timeout_s: float | None = None,
              *, grace_s: float = STOP_GRACE_S) -> LauncherResult:
    """Run the launcher with the probe in its own session (its own process group), so that a timeout,
    Ctrl-C or SIGTERM ends the launcher and every rank or child it started (``end_process_group``),
    also when the launcher ignores SIGTERM. Its stderr is shown as it comes and its tail kept."""
    argv = probe_command(command, folder)
    if shutil.which(argv[0], path=environ.get("PATH")) is None:
        raise UserError(f"command not found: {argv[0]}")
    check_timeout(timeout_s)
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
    proc: subprocess.Popen | None = None
    pump: threading.Thread | None = None
    timed_out = False
    try:
        # a signal in the launcher's first moments is raised after the block, with the handle kept and the pump of
        # its stderr started: one raised inside Thread.start (which waits for the thread) left a thread that could
        # not be joined, and the run ended with a traceback instead of SIGTERM's exit
        with signals_held():
            try:
                proc = subprocess.Popen(argv, env=dict(environ), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=True)
            except OSError as exc:
                raise UserError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
            pump = threading.Thread(target=_pump, args=(proc.stderr, sys.stderr, tail), daemon=True)
            pump.start()
        try:
            status = wait_in_slices(proc, timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            end_process_group(proc, grace_s)
            status = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    except BaseException:  # Ctrl-C, SIGTERM (cli.signals), anything: no rank survives linkscope
        if proc is not None:
            end_process_group(proc, grace_s)
        raise
    finally:
        if pump is not None and pump.is_alive():
            pump.join(timeout=grace_s)
    result = LauncherResult(status, tuple(tail), timed_out)
    if timed_out:
        raise UserError(f"the launcher did not finish within {timeout_s:g} s; its process group was ended: "
                        f"{' '.join(command)}" + (f" (last stderr line: {result.stderr_tail[-1][:200]})"
                                                   if result.stderr_tail else ""))
    return result


def read_probes(folder: Path) -> list[dict[str, Any]]:
    """Every rank's probe record in ``folder``, each checked against ``probe.PROBE_RECORD``, in
    world-rank order (refused: none, mixed, repeated)."""
    records = []
    for path in sorted(Path(folder).glob("*.json")):
        data = loads_strict(read_text(path, "probe record"), str(path))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise UserError(f"{path}: not a linkscope probe record")
        validate(data, PROBE_RECORD, f"probe record {path}")
        records.append(data)
    if not records:
        raise UserError("no rank wrote a probe record", hint="does every rank reach the folder (a shared file "
                        "system across hosts) and find linkscope (PYTHONPATH, -x PYTHONPATH for mpirun)?")
    ranks = [r.get("world_rank") for r in records]
    if None in ranks:
        if len(records) > 1:
            raise UserError("a rank wrote its probe record without a rank variable (OMPI_COMM_WORLD_RANK, PMI_RANK, "
                            "SLURM_PROCID, RANK, ...)", hint="run the audit under a launcher")
        records[0]["world_rank"] = 0
        return records
    if len(set(ranks)) != len(ranks):
        raise UserError("two probe records for one rank (records of two jobs in one folder?)")
    return sorted(records, key=lambda r: int(r["world_rank"]))


# ---- judging -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankView:
    """One rank as judged: what it got, resolved against the topology."""

    rank: int
    host: str
    local_rank: int | None
    gpu: int | None
    gpu_source: str
    cpus: tuple[int, ...]
    cpu_devices: tuple[str, ...]
    gpu_cpu: str | None
    nics: tuple[str, ...]
    nic_var: str | None
    mems_allowed: tuple[int, ...] = ()


@dataclass(frozen=True)
class Problem:
    kind: str
    host: str
    ranks: tuple[int, ...]
    what: str
    cost: str
    fix: tuple[str, ...]
    provenance: str = "simulated"


@dataclass(frozen=True)
class AuditReport:
    topology: str
    launcher: str
    command: tuple[str, ...]
    ranks: tuple[RankView, ...]
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"format": "linkscope.audit", "version": 1, **asdict(self)}


def _gpu_spec(text: str | None) -> tuple[str, list[int]]:
    if text is None or text in ("auto", ""):
        return "auto", []
    if text in ("env", "local"):
        return text, []
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise UserError(f"--gpus {text!r}: expected auto, env, local or one GPU number per rank (0,4,2,2)") from None
    if any(v < 0 for v in values):
        raise UserError(f"--gpus {text!r}: GPU numbers start at 0")
    return "list", values


def _bus(text: str | None) -> str:
    return (text or "").lower()[-12:]


def _resolve_gpu(record: dict[str, Any], topology: Topology, spec: tuple[str, list[int]]) -> tuple[int | None, str]:
    """(topology GPU index, how it was found) of one rank."""
    rank, local = int(record["world_rank"]), record.get("local_rank")
    raw_env = record.get("visible_env")
    visible = str(raw_env.get("CUDA_VISIBLE_DEVICES", "")).strip() if isinstance(raw_env, dict) else ""
    entries = [e.strip() for e in visible.split(",") if e.strip()] if visible else []
    count = topology.gpu_count
    mode, values = spec
    if mode == "list":
        if rank >= len(values):
            raise UserError(f"--gpus names {len(values)} GPUs but rank {rank} ran", hint="one GPU number per rank")
        if values[rank] >= count:
            raise UserError(f"--gpus: rank {rank} on GPU {values[rank]}, but {topology.name} has {count} GPUs")
        return values[rank], "--gpus"
    if mode in ("auto", "env"):  # a platform whose runtime numbers GPUs by its own rules (HIP's on AMD)
        found = next((f for f in (launch.probed_gpu(record, topology) for launch in platforms.launch_environments())
                      if f is not None), None)
        if found is not None:
            return found
    listed = record.get("gpus") or []
    if listed:
        seen = listed
        if entries:
            by_uuid = {g["uuid"]: g for g in listed}
            seen = [by_uuid[e] for e in entries if e in by_uuid] or \
                   [listed[int(e)] for e in entries if e.isdigit() and int(e) < len(listed)]
        if seen:
            pick = seen[(local or 0) % len(seen)] if len(seen) > 1 else seen[0]
            for device in topology.gpus:
                if device.uuid and device.uuid == pick["uuid"]:
                    return int(device.index or 0), "UUID"
            for device in topology.gpus:
                if device.pci_bus_id and _bus(device.pci_bus_id) == _bus(pick.get("pci_bus_id")):
                    return int(device.index or 0), "PCI bus id"
    if mode in ("auto", "env") and entries and all(e.isdigit() for e in entries):
        chosen = [int(e) for e in entries]
        gpu = chosen[(local or 0) % len(chosen)]
        if gpu < count:
            return gpu, "CUDA_VISIBLE_DEVICES"
    if local is not None:
        return int(local) % count, "local rank"
    return None, UNKNOWN_GPU


def _cpu_devices(topology: Topology, cpus: Sequence[int]) -> tuple[str, ...]:
    found = []
    for cpu in topology.of_kind(DeviceKind.CPU):
        if set(cpu.cores) & set(cpus):
            found.append(cpu.id)
    return tuple(found)


def _route_numbers(topology: Topology, a: str | int, b: str | int) -> tuple[float, float, str]:
    """(bottleneck GB/s, summed link latency µs, level) of the route from ``a`` to ``b``."""
    from ..mapping.cost import DEFAULT_LINK_LATENCY_US

    links = query.route(topology, a, b)
    bw = min((link.capacity_gb_per_s for link in links), default=float("inf"))
    lat = sum(link.latency_us if link.latency_us is not None else DEFAULT_LINK_LATENCY_US[link.kind] for link in links)
    return bw, lat, query.pair_level(topology, a, b).code


def _nic_of(topology: Topology, name: str) -> Device | None:
    for nic in topology.of_kind(DeviceKind.NIC):
        if (nic.device_name or nic.id) == name or nic.id == name:
            return nic
    return None


class _Fixes:
    """The launcher's own options for each kind of problem."""

    def __init__(self, launcher: str, topology: Topology, topology_option: str, hosts: int) -> None:
        self.launcher = launcher
        self.map_line = (f"linkscope map TRAFFIC.json {topology_option}" + (f" --nodes {hosts}" if hosts > 1 else "")
                         + " -o mapping.json, then run each rank as: linkscope launch --mapping mapping.json -- APP "
                         "(sets CUDA_VISIBLE_DEVICES, UCX_NET_DEVICES, NCCL_IB_HCA and the CPU binding per rank)")
        cpus = topology.of_kind(DeviceKind.CPU)
        per_numa = max(1, topology.gpu_count // max(len(cpus), 1))
        self.per_numa = per_numa

    def numa(self) -> tuple[str, ...]:
        flags = {
            "ompi": f"mpirun --map-by ppr:{self.per_numa}:numa --bind-to core (local rank k on GPU k), or "
                    "--rankfile from linkscope map --emit rankfile",
            "hydra": "mpiexec -map-by numa -bind-to core (local rank k on GPU k)",
            "srun": "srun --cpu-bind=ldoms --gpu-bind=closest (each task on the NUMA domain of its GPU)",
            "torchrun": "torchrun --numa-binding=node (PyTorch >= 2.9: each worker on the CPUs of its GPU's NUMA "
                        "node; docs.pytorch.org/docs/main/elastic/numa.html)",
        }
        return tuple(x for x in (flags.get(self.launcher), self.map_line) if x)

    def gpu(self, gpus_per_host: int) -> tuple[str, ...]:
        flags = {
            "ompi": f"one rank per GPU: mpirun --map-by ppr:{gpus_per_host}:node, and each rank on GPU = its local "
                    "rank (CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK in a wrapper)",
            "hydra": f"one rank per GPU: mpiexec -ppn {gpus_per_host}, GPU = MPI_LOCALRANKID",
            "srun": "srun --gpus-per-task=1 (each task gets a GPU of its own)",
            "torchrun": f"torchrun --nproc-per-node={gpus_per_host} and torch.cuda.set_device(LOCAL_RANK)",
        }
        return tuple(x for x in (flags.get(self.launcher), self.map_line) if x)

    def cores(self) -> tuple[str, ...]:
        flags = {
            "ompi": "mpirun --bind-to core (with --map-by ppr:N:numa:PE=k for k cores a rank)",
            "hydra": "mpiexec -bind-to core",
            "srun": "srun --cpu-bind=cores --cpus-per-task=k",
            "torchrun": "torchrun --numa-binding=node",
        }
        return tuple(x for x in (flags.get(self.launcher), self.map_line) if x)

    def nic(self, per_rank: str) -> tuple[str, ...]:
        return (f"per rank: {per_rank}; one value for the whole job cannot suit GPUs of both sockets: set it per rank, "
                "or leave NCCL_IB_HCA unset (NCCL then picks the NIC by topology)", self.map_line)


def judge(records: Sequence[dict[str, Any]], topology: Topology, *, launcher: str = "other",
          gpus: str | None = None, topology_option: str = "--preset NAME", command: Sequence[str] = ()) -> AuditReport:
    """The AuditReport of the probe records against ``topology`` (one node; every host is one)."""
    from ..mapping.binding import core_sets, share
    from ..model.predict import FabricModel

    spec = _gpu_spec(gpus)
    notes: list[str] = []
    if topology.gpu_count == 0:
        raise UserError(f"topology {topology.name!r} has no GPU to judge placements against")
    views: list[RankView] = []
    for record in records:
        cpus = tuple(int(c) for c in record.get("cpus") or ())
        gpu, source = _resolve_gpu(record, topology, spec)
        if gpu is None and source != UNKNOWN_GPU:  # a platform's rules found none: say why
            notes.append(f"rank {record['world_rank']}: {source}")
        choice = choice_in_environment(record.get("nic_env") or {})
        nics: tuple[str, ...] = ()
        nic_var = None
        if choice is not None and gpu is not None:
            value, nic_var = choice
            nic_spec = parse_nic_spec(value)
            device = topology.gpu(gpu)
            node_nics = topology.of_kind(DeviceKind.NIC)
            try:
                nics = tuple(n.device_name or n.id for n in
                             choose_from(nic_spec, device, node_nics, query.nearest_nics(topology, gpu)))
            except UserError as exc:
                notes.append(f"rank {record['world_rank']}: {nic_var}={value}: {exc.one_line()}")
        gpu_cpu = query.local_cpu(topology, gpu) if gpu is not None else None
        views.append(RankView(
            rank=int(record["world_rank"]), host=str(record.get("host", "?")), local_rank=record.get("local_rank"),
            gpu=gpu, gpu_source=source, cpus=cpus, cpu_devices=_cpu_devices(topology, cpus),
            gpu_cpu=gpu_cpu.id if gpu_cpu else None, nics=nics, nic_var=nic_var,
            mems_allowed=tuple(record.get("memory", {}).get("mems_allowed") or ()),
        ))
    hosts = list(dict.fromkeys(v.host for v in views))
    fixes = _Fixes(launcher, topology, topology_option, len(hosts))
    by_id = topology.by_id
    problems: list[Problem] = []
    siblings = {int(r["world_rank"]): {int(c): [int(x) for x in s] for c, s in (r.get("smt_siblings") or {}).items()}
                for r in records}
    machine_cpus = {int(r["world_rank"]): int(r.get("machine_cpus") or 0) for r in records}
    machine_nodes = {int(r["world_rank"]): tuple(r.get("machine_numa_nodes") or ()) for r in records}
    copies = {int(r["world_rank"]): r["copies"] for r in records if isinstance(r.get("copies"), dict)}
    model = None
    for host in hosts:
        members = [v for v in views if v.host == host]
        # two or more ranks on one GPU
        on_gpu: dict[int, list[RankView]] = {}
        for v in members:
            if v.gpu is not None:
                on_gpu.setdefault(v.gpu, []).append(v)
        for gpu, sharing in on_gpu.items():
            if len(sharing) < 2:
                continue
            if model is None:
                model = FabricModel(topology)
            k = len(sharing)
            alone = model.predict([("host", gpu, SHARED_COPY_BYTES)], CE.key)[0].gb_per_s
            shared = model.predict([("host", gpu, SHARED_COPY_BYTES)] * k, CE.key)
            each = min(p.gb_per_s for p in shared)
            problems.append(Problem(
                "gpu-shared", host, tuple(v.rank for v in sharing),
                f"ranks {_ranks(sharing)} share GPU {gpu} on {host}",
                f"{k} ranks on one GPU: each gets ~1/{k} of its compute and memory; {k} concurrent 64 MiB host-to-GPU "
                f"copies: {each:.1f} GB/s each vs {alone:.1f} GB/s alone (fabric model, simulated)",
                fixes.gpu(topology.gpu_count)))
        # ranks whose CPU sets share a physical core
        physical = {}
        for v in members:
            sib = siblings.get(v.rank, {})
            physical[v.rank] = {x for c in v.cpus for x in sib.get(c, [c])}
        groups = _overlapping([v.rank for v in members], physical)
        for group in groups:
            shared_cpus = set.intersection(*(physical[r] for r in group)) or set.union(*(physical[r] for r in group))
            unbound = [r for r in group if machine_cpus.get(r) and len(physical[r]) >= machine_cpus[r]]
            what = (f"ranks {_ranks(group)} on {host} share CPU(s) {format_cpu_list(sorted(shared_cpus))}" +
                    (f" (rank(s) {_ranks(unbound)} not bound: every CPU of the machine)" if unbound else ""))
            problems.append(Problem(
                "core-shared", host, tuple(group), what,
                f"{len(group)} ranks time-share those cores: each gets about 1/{len(group)} of them when all are "
                "busy, and the OS may move a rank away from its GPU's NUMA node (modelled)",
                fixes.cores(), provenance="modelled"))
        # CPUs or memory on another NUMA node than the GPU's
        near_members: dict[str, list[RankView]] = {}
        for v in members:
            if v.gpu_cpu is not None:
                near_members.setdefault(v.gpu_cpu, []).append(v)
        for v in members:
            if v.gpu is None or v.gpu_cpu is None:
                continue
            if not v.cpu_devices:
                notes.append(f"rank {v.rank}: its CPUs {format_cpu_list(list(v.cpus))} are not in topology "
                             f"{topology.name} (NUMA placement not judged)")
                continue
            far = [c for c in v.cpu_devices if c != v.gpu_cpu]
            gpu_cpu = by_id[v.gpu_cpu]
            sharers = sorted(near_members[v.gpu_cpu], key=lambda m: (m.gpu or 0, m.rank))
            right = share(core_sets(gpu_cpu), len(sharers), sharers.index(v))
            if far:
                near_bw, near_lat, near_level = _route_numbers(topology, v.gpu_cpu, v.gpu)
                far_bw, far_lat, far_level = _route_numbers(topology, far[0], v.gpu)
                part = "all of its CPUs are" if v.gpu_cpu not in v.cpu_devices else "some of its CPUs are"
                measured = _measured_text(v, views, copies)
                problems.append(Problem(
                    "numa-far", host, (v.rank,),
                    f"rank {v.rank} on {host} uses GPU {v.gpu} (local to {v.gpu_cpu}, NUMA "
                    f"{gpu_cpu.numa_node}) but {part} on {', '.join(far)} (NUMA "
                    f"{', '.join(str(by_id[c].numa_node) for c in far)}): CPUs {format_cpu_list(list(v.cpus))}",
                    f"host<->GPU copies from {far[0]}: route {far_level}, bottleneck {far_bw:.1f} GB/s, "
                    f"{far_lat:.2f} us of link latency, vs {near_level} {near_bw:.1f} GB/s {near_lat:.2f} us from "
                    f"{v.gpu_cpu} (topology route, simulated; pinned buffers and the rank's memory follow its CPUs)"
                    + measured,
                    (f"rank {v.rank}: cores {format_cpu_list(list(right))} ({v.gpu_cpu}, local to GPU {v.gpu})",
                     *fixes.numa()), provenance="measured and simulated" if measured else "simulated"))
            nodes = machine_nodes.get(v.rank, ())
            if v.mems_allowed and nodes and set(v.mems_allowed) != set(nodes) and \
                    gpu_cpu.numa_node is not None and gpu_cpu.numa_node not in v.mems_allowed:
                problems.append(Problem(
                    "memory-far", host, (v.rank,),
                    f"rank {v.rank} on {host}: memory bound to NUMA {format_cpu_list(list(v.mems_allowed))}, its GPU "
                    f"{v.gpu} is on NUMA {gpu_cpu.numa_node}",
                    "every host buffer of the rank crosses the socket link on its way to the GPU (simulated)",
                    (f"bind memory to NUMA {gpu_cpu.numa_node} (numactl --membind={gpu_cpu.numa_node}), or drop the "
                     "memory binding", *fixes.numa())))
        # a NIC farther from the GPU than the nearest
        for v in members:
            if v.gpu is None or not v.nics:
                continue
            nearest = query.nearest_nics(topology, v.gpu)
            if not nearest:
                continue
            best = min(query.distance(topology, v.gpu, n) for n in nearest)  # distance grows with the level
            for name in v.nics:
                nic = _nic_of(topology, name)
                if nic is None or query.distance(topology, v.gpu, nic) <= best:
                    continue
                near = nearest[(v.gpu or 0) % len(nearest)]
                near_name = near.device_name or near.id
                bw, lat, level = _route_numbers(topology, v.gpu, nic.id)
                nbw, nlat, nlevel = _route_numbers(topology, v.gpu, near.id)
                problems.append(Problem(
                    "nic-far", host, (v.rank,),
                    f"rank {v.rank} on {host}: {v.nic_var} names {name} ({level} from GPU {v.gpu}); its nearest NIC is "
                    f"{near_name} ({nlevel})",
                    f"GPU {v.gpu} -> {name}: bottleneck {bw:.1f} GB/s, {lat:.2f} us of link latency, vs {nbw:.1f} GB/s "
                    f"{nlat:.2f} us to {near_name} (topology route, simulated; GPUDirect RDMA across the CPU is "
                    "often far slower than the route's rate, or disabled)",
                    fixes.nic(f"rank {v.rank}: UCX_NET_DEVICES={near_name}:1 NCCL_IB_HCA={near_name}")))
                break
    return AuditReport(topology.name, launcher, tuple(command), tuple(views), tuple(problems), tuple(notes))


def _measured_text(v: RankView, views: Sequence[RankView], copies: Mapping[int, dict[str, Any]]) -> str:
    """The rank's own measured copy rates (the probe's, from its cores), beside those of a rank of
    the same host whose CPUs are all on the GPU's NUMA node, where one measured."""
    mine = copies.get(v.rank)
    if not mine:
        return ""
    text = (f"; measured from this rank's cores: host-to-GPU {mine['h2d_gb_per_s']:.1f} GB/s, GPU-to-host "
            f"{mine['d2h_gb_per_s']:.1f} GB/s ({mine['size_bytes'] >> 20} MiB pinned, best of {mine['reps']})")
    near = next((w for w in views if w.host == v.host and w.rank != v.rank and w.rank in copies and
                 w.cpu_devices == (v.gpu_cpu,) and w.gpu_cpu == v.gpu_cpu), None)
    if near is not None:
        other = copies[near.rank]
        text += (f" vs {other['h2d_gb_per_s']:.1f} / {other['d2h_gb_per_s']:.1f} GB/s measured by rank {near.rank} "
                 f"from {v.gpu_cpu}'s cores to its GPU {near.gpu}")
    return text


def _ranks(items: Sequence[Any]) -> str:
    ranks = sorted(int(getattr(x, "rank", x)) for x in items)
    return ", ".join(str(r) for r in ranks)


def _overlapping(ranks: Sequence[int], cpus: Mapping[int, set[int]]) -> list[list[int]]:
    """Groups of ranks joined by shared CPUs (connected parts; groups of one dropped)."""
    parent = {r: r for r in ranks}

    def find(r: int) -> int:
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for i, a in enumerate(ranks):
        for b in ranks[i + 1:]:
            if cpus[a] & cpus[b]:
                parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for r in ranks:
        groups.setdefault(find(r), []).append(r)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def audit(command: Sequence[str], topology: Topology, environ: Mapping[str, str], *, gpus: str | None = None,
          folder: Path | None = None, keep: bool = False, topology_option: str = "--preset NAME",
          timeout_s: float | None = None) -> tuple[AuditReport, LauncherResult]:
    """Run the probe under ``command`` (a launcher and its options), judge, and return the report
    with how the launcher ended. The ranks write into a folder this call creates, and only there:
    inside ``folder`` when given (kept, named in the report's notes, since the user asked for the
    records), else in the current directory (which a cluster's ranks usually share; removed unless
    ``keep``). Nothing already in ``folder`` is read, changed or removed."""
    parent = Path(".") if folder is None else Path(folder)
    if folder is not None and parent.exists() and not parent.is_dir():
        raise UserError(f"--dir {parent}: exists and is not a folder")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        where = Path(tempfile.mkdtemp(prefix=".linkscope-audit-" if folder is None else "linkscope-audit-",
                                      dir=parent))
    except OSError as exc:
        raise UserError(f"cannot create the probe folder in {parent}: {exc.strerror or exc}") from None
    remove = folder is None and not keep
    try:
        launched = run_probe(command, where.resolve(), environ, timeout_s)
        try:
            records = read_probes(where)
        except UserError as exc:
            failure = launched.failure()
            if failure is not None:  # the launcher's own reason comes first (mpirun refusing root, ...)
                raise UserError(f"{failure}; {exc}") from None
            raise
    finally:
        if remove:
            shutil.rmtree(where, ignore_errors=True)
    report = judge(records, topology, launcher=launcher_kind(command), gpus=gpus, topology_option=topology_option,
                   command=command)
    expected = records[0].get("rank_env", {})
    size = next((int(expected[k]) for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE")
                 if str(expected.get(k, "")).isdigit()), None)
    notes = report.notes
    if size is not None and size != len(records):
        notes += (f"{len(records)} of {size} ranks wrote a probe record",)
    if not remove:
        notes += (f"the ranks' probe records are in {where}",)
    if notes != report.notes:
        report = AuditReport(report.topology, report.launcher, report.command, report.ranks, report.problems, notes)
    return report, launched


__all__ = [
    "LAUNCHERS",
    "AuditReport",
    "LauncherResult",
    "Problem",
    "RankView",
    "audit",
    "check_timeout",
    "end_process_group",
    "judge",
    "launcher_kind",
    "probe_command",
    "read_probes",
    "run_probe",
]
