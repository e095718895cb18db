"""The platform table: which GPU vendors linkscope knows, and for each where its pieces live.

One row per platform (NVIDIA, AMD, and the simulated twin). Discovery (``discovery/auto``), the
engine registry (``engines/registry``), the device runtime's vendor (``engines/gpu/runtime``), the
link counters of ``watch`` (``counters/sources``), ``linkscope env`` (``envinfo``) and a run's
context versions (``results/context``) read this table instead of their own if-chains, so a third
vendor (Level Zero, say) is one row here plus its backend modules. The table names its pieces by
``"module:attribute"`` and ``load`` imports them when asked: nothing is imported here, so every
layer may read it (tests/test_layers.py: ground).

Order matters: live discovery, ``--backend auto`` and ``watch`` try the hardware platforms in
table order and say every reason when none works.

Each row holds the objects of small Protocols (``RuntimeTraits``, ``KernelDialect``, ``LaunchEnvironment``,
``DiscoveryFacts``) or names them by reference: the pure ones live in ``vendors/<vendor>.py`` (ground
layer), the others in the vendor's own modules of their layer (``discovery/nvml.py``,
``mapping/amd.py`` ...). A device's runtime ordinals are ``Device.ordinals`` keyed by the row's key.
Callers ask the row; ``tests/test_vendor_branches.py`` lists any branch on a vendor's name outside
these modules, and ``tests/test_third_platform.py`` shows a new row reaching discovery, launch, env,
health and the kernels.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import UserError
from .vendors import amd as _amd
from .vendors import nvidia as _nvidia

#: How a latency chase is spread over the reader's SMs (Platform.latency_chase, engines/gpu/latency.py):
#: one block; one block per SM, all at once (a sample is their mean); one SM after another, alone, in a
#: launch each (a sample per SM: nvbandwidth's method).
CHASE_ONE_BLOCK, CHASE_EVERY_SM, CHASE_IN_TURN = "one-block", "every-sm", "in-turn"
CHASE_SPREADS = (CHASE_ONE_BLOCK, CHASE_EVERY_SM, CHASE_IN_TURN)


class RuntimeTraits(Protocol):
    """What one vendor's device runtime does differently under CuPy (``engines/gpu/runtime``)."""

    api: str  # the runtime's name in messages (``CUDA``, ``HIP``)
    device_word: str  # "no <word> device visible"
    cupy_is_hip: bool  # which CuPy build carries it (``cupy.cuda.runtime.is_hip``)
    fake_arch: str  # the architecture a fake device of this runtime reports (``engines/gpu/fake``); "" for none

    def host_alloc_flags(self, numa_user: bool) -> int: ...  # added to portable | mapped
    def malloc_uncached(self, runtime: Any, ordinal: int, size_bytes: int) -> int | None: ...  # None: plain malloc
    def wall_clock_khz(self, runtime: Any, ordinal: int) -> int: ...  # the kernels' timer rate; 0 where unused


class KernelDialect(Protocol):
    """The vendor's kernel language for ``engines/gpu/kernels``: prelude before the shared source."""

    compiler: str  # NVRTC, hipRTC
    prelude: str  # the nanosecond timer and the load/store hints
    bulk_copies: bool  # the Hopper bulk-copy (TMA) kernels compile here

    def timer_options(self, rt: Any, ordinals: Sequence[int]) -> tuple[str, ...]: ...


class LaunchEnvironment(Protocol):
    """How a rank is pointed at its GPU (``mapping``: ``map``'s env files, ``launch``)."""

    visible_devices_var: str  # CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES
    accepts_node_uuids: bool  # the variable takes the UUIDs a cluster's node files list

    def device_tokens(self, gpus: Sequence[Any]) -> list[str]: ...  # per GPU of a topology, in order
    def live_table(self) -> Any: ...  # this node's device table to place ranks by, or None
    def check(self, assignment: Any, live: Any, node_gpus: int | None) -> Any: ...  # the mapping, checked
    def place(self, assignment: Any, rank: int, environ: Any, live: Any) -> tuple[dict[str, str], str] | None: ...
    def env_file_head(self, assignment: Any) -> str: ...
    def probed_gpu(self, record: Any, topology: Any) -> tuple[int | None, str] | None: ...  # see below

    # ``probed_gpu``: the topology GPU a rank of ``audit``'s placement probe used (``record``: the rank's
    # probe output) and how it was found, by this runtime's rules; None when the rank is not on its GPUs.


class DiscoveryFacts(Protocol):
    """Reading one vendor's discovery facts dump (``diagnose``: P2P health, BARs, link state)."""

    recorded_file: str  # its name in a ``topo export --raw`` folder
    vram_bar_in_sysfs: bool  # the GPU's largest sysfs BAR is its VRAM BAR
    unrecorded_link_health: str  # what a recording without link state says

    def p2p_pairs(self, facts: Any) -> dict[frozenset[str], dict[str, Any]]: ...  # driver P2P status by bus pair
    def gpu_records(self, facts: Any) -> dict[str, Any]: ...  # each GPU's record (BAR1) by bus id
    def host_name(self, topology: Any) -> str | None: ...  # the host a topology from these facts names
    def link_health(self, facts: Any) -> list[tuple[str, Any, Any]]: ...  # (bus id, index, link health)


@dataclass(frozen=True)
class LinkFabric:
    """The GPU-to-GPU fabric a platform's link counters and link health describe (``counters``).

    Attributes:
        key: its name in records (``GpuPlan.fabric``, a link-health snapshot's ``fabric``, a
            counter row's ``bus``): ``nvlink``, ``xgmi``.
        label: its name in sentences (``NVLink``, ``xGMI``).
        counter_source: where its data counters come from, as a record keeps it, when the counter
            source does not say (``CounterSource.counter_source``).
        no_links: what a GPU with none of its links active says.
        documented_error_limits: its error counters have documented limits (DCGM's NVLink rules,
            ``counters/linkerrors``); without, their growth is reported and not judged.
    """

    key: str
    label: str
    counter_source: str
    no_links: str
    documented_error_limits: bool = False


@dataclass(frozen=True)
class MpiGpuSupport:
    """How an MPI library says it takes this runtime's device buffers (``comm/gpu_aware``).

    Attributes:
        key: the runtime's key in a run's ``gpu_aware`` record (``cuda``, ``rocm``).
        label: its name in the verdict (``CUDA`` -> ``CUDA-aware``).
        memory_kind: the MPI 4.1 ``mpi_memory_alloc_kinds`` entry naming its device memory (``cuda:device``).
        mpix_query: Open MPI's ``MPIX_Query_*_support`` function (mpi-ext), or "".
        ompi_info_params: the ``ompi_info --parsable --all`` parameters saying Open MPI was built with
            it (the first is the one reported), or ().
        mvapich_switch: the variable that switches MVAPICH2's support on at run time, or "".
    """

    key: str
    label: str
    memory_kind: str
    mpix_query: str = ""
    ompi_info_params: tuple[str, ...] = ()
    mvapich_switch: str = ""


@dataclass(frozen=True)
class XmlNames:
    """What the topology XML files of hwloc and NCCL call this vendor's GPUs (``discovery/hwloc_xml``,
    ``discovery/nccl_xml``).

    Attributes:
        pci_vendor_ids: its PCI vendor ids (``0x10de``), as hwloc's ``pci_type`` gives them.
        hwloc_backends: the ``Backend`` info of hwloc's OS devices of its GPUs (``NVML``, ``RSMI``).
        hwloc_uuid_info: the info hwloc keeps a GPU's UUID in (``NVIDIAUUID``).
        nccl_gpu_class: the PCI class NCCL's (RCCL's) XML gives its GPU.
    """

    pci_vendor_ids: tuple[str, ...]
    hwloc_backends: tuple[str, ...]
    hwloc_uuid_info: str
    nccl_gpu_class: str


@dataclass(frozen=True)
class Platform:
    """One vendor's pieces. ``None`` / ``()``: the platform has no such piece.

    Attributes:
        key: the vendor name records and method meanings use (``nvidia``, ``amd``, ``sim``).
        label: for people.
        hardware: True when it measures this machine's GPUs (``sim`` does not).
        engine: the ``--backend`` name; ``engine_factory``: ``"module:callable"`` building it
            from a Topology; ``engine_probe``: a cheap check returning None/"" when usable, else the
            reason (a string, or an object with ``ok`` and ``reason``).
        runtime: the CuPy build the engine runs on (``cuda`` / ``rocm``), ``runtime.platform``.
        cupy_wheel: what to install for that runtime.
        discover: ``"module:callable"`` (sysfs facts, notes) -> Topology, raising
            BackendUnavailable with the reason when the platform finds no GPU here.
        discovery_backends: names in ``discovery/registry`` this platform's discovery uses.
        counters: ``"module:callable"`` opening its link-counter source for ``watch``.
        health_facts: ``"module:callable"`` returning this machine's discovery facts dump (P2P
            status per pair, BAR1) for the P2P health check (``diagnose/gather``), raising
            BackendUnavailable when the platform finds no GPU here.
        collective_library: the NCCL-API library CuPy's build of this runtime binds (``cupy.cuda.nccl``).
        env_rows: ``linkscope env`` rows: (row name, ``"module:callable"`` returning a row dict).
        version_probes: RunRecord context versions: (key, ``"module:callable"`` returning a string).
        copy_loops_in_kernel: the SM copy between two GPUs repeats a timed region's copies inside one
            launch (nvbandwidth's loopCount). Only where the copy kernel's loads skip the reader's
            caches for peer memory: on H100 the L2-only loads (``ld.global.cg``) of peer lines are not
            kept by the reader (remote-read latency 0.85 us, the link's, 2026-11-25), while streaming
            loads (``ld.global.cs``) re-read from the reader's L1 inside one launch (sm-pull read
            1,411-3,207 GB/s over an NV18 link at 1-16 MiB). On AMD a GCD's L2 caches coarse-grained
            peer memory (docs/amd.md), so each copy stays a launch of its own there.
        latency_chase: how the pointer chase of each latency kind is spread over the reader's SMs, as
            (kind, spread) pairs (spreads: ``CHASE_SPREADS``; a kind not named runs on one block).
            nvbandwidth's latency figure is the mean over the SMs of one SM chasing alone
            (kernels.cu latencyPtrChaseKernel: launch k lets block k chase); one SM alone is not
            representative (block 0 read a peer 3% above that mean on 2 x H100). On 2 x H100
            (2026-11-25, visit 12, docs/runs/scripts/chase_modes.py beside nvbandwidth in the same call): every
            SM at once read a peer in 0.8264-0.8271 us against nvbandwidth's 0.8300-0.8310 and each SM
            in turn 0.8275-0.8301; host memory every SM at once 1.221-1.270 against 1.178-1.205 (132
            chasers share the PCIe path) and each SM in turn 1.186-1.204. Hence every SM at once for
            remote-read (one launch a sample) and in turn for host-read. Off on AMD: not measured there.
        sm_push_shape: (threads, blocks per SM, unroll) of the ``sm-push`` copy kernel between two GPUs where the engine's
            launch shape is left at its default (``SmLaunch()``, 512 x 4 x 4). On 2 x H100 (NV18,
            2026-11-25, docs/runs/scripts/sm_launch_sweep.py, two rounds beside nvbandwidth -b in the same call)
            256 x 1 x 4 pushed 354, 370 and 370 GB/s at 1, 16 and 64 MiB where the default pushed 339,
            368 and 368 and nvbandwidth's write_sm 317-320, 369 and 369; the best of 18 shapes at both
            16 and 64 MiB in visit 5 too. Pulls keep the default (no shape reached nvbandwidth's
            read_sm at 64 MiB).
        runtime_traits: the device runtime's ``RuntimeTraits``; ``kernels``: its ``KernelDialect``.
        launch: ``"module:attribute"`` of its ``LaunchEnvironment``.
        pcie_probe: ``"module:callable"`` reading each GPU's PCIe link state now (the survey reads
            it right after its host copies, while the links are up).
        facts: ``"module:attribute"`` of its ``DiscoveryFacts``: reading the facts dump that
            ``health_facts`` returns and ``topo export --raw`` records (``diagnose``).
        ordinal_field: the field a topology stored this vendor's runtime ordinal in before
            ``Device.ordinals`` (``cuda_ordinal``): read, never written (``topology/io``).
        fabric: its GPU fabric's ``LinkFabric`` (the link counters' and link health's names).
        mpi_support: how an MPI says it takes this runtime's device buffers (``MpiGpuSupport``).
        xml: what hwloc's and NCCL's topology XML call its GPUs (``XmlNames``).
    """

    key: str
    label: str
    hardware: bool
    engine: str
    engine_factory: str
    engine_probe: str | None = None
    runtime: str | None = None
    cupy_wheel: str = ""
    discover: str | None = None
    discovery_backends: tuple[str, ...] = ()
    counters: str | None = None
    health_facts: str | None = None
    collective_library: str | None = None
    env_rows: tuple[tuple[str, str], ...] = ()
    version_probes: tuple[tuple[str, str], ...] = ()
    copy_loops_in_kernel: bool = False
    latency_chase: tuple[tuple[str, str], ...] = ()
    sm_push_shape: tuple[int, int, int] | None = None
    runtime_traits: RuntimeTraits | None = None
    kernels: KernelDialect | None = None
    launch: str | None = None
    facts: str | None = None
    pcie_probe: str | None = None
    ordinal_field: str | None = None
    fabric: LinkFabric | None = None
    mpi_support: MpiGpuSupport | None = None
    xml: XmlNames | None = None


NVIDIA = Platform(
    key="nvidia", label="NVIDIA", hardware=True, engine="cuda",
    engine_factory="linkscope.engines.cuda:CudaEngine", engine_probe="linkscope.engines.cuda:probe",
    runtime="cuda", cupy_wheel="cupy-cuda12x (or cupy-cuda13x)",
    discover="linkscope.discovery.nvml:discover_platform", discovery_backends=("nvml",),
    counters="linkscope.counters.nvml:open_nvml", health_facts="linkscope.discovery.nvml:live_facts",
    collective_library="NCCL",
    env_rows=(("cuda (CuPy)", "linkscope.envinfo:cupy_row"), ("nccl", "linkscope.envinfo:nccl_row")),
    version_probes=(("nvidia_driver", "linkscope.discovery.nvml:driver_version"),
                    ("cuda_driver_api", "linkscope.engines.gpu.runtime:cuda_driver_api_version"),
                    ("cuda_runtime", "linkscope.engines.gpu.runtime:cuda_runtime_version"),
                    ("cupy", "linkscope.engines.gpu.runtime:cupy_version"),
                    ("nccl", "linkscope.engines.gpu.runtime:nccl_version")),
    copy_loops_in_kernel=True,
    latency_chase=(("remote-read", CHASE_EVERY_SM), ("host-read", CHASE_IN_TURN)),
    sm_push_shape=(256, 1, 4),
    runtime_traits=_nvidia.RUNTIME, kernels=_nvidia.KERNELS, launch="linkscope.mapping.nvidia:LAUNCH",
    facts="linkscope.discovery.nvml:FACTS", pcie_probe="linkscope.discovery.nvml:pcie_link_states",
    ordinal_field="cuda_ordinal",
    fabric=LinkFabric("nvlink", "NVLink", "nvml-field-nvlink-throughput-data-kib", "no active NVLink",
                      documented_error_limits=True),
    # Open MPI: mpi-ext's MPIX_Query_cuda_support, ompi_info's mpi_built_with_cuda_support (or its opal synonym);
    # MVAPICH2: MV2_USE_CUDA=1 (comm/gpu_aware's docstring says what each library documents)
    mpi_support=MpiGpuSupport("cuda", "CUDA", "cuda:device", "MPIX_Query_cuda_support",
                              ("mpi_built_with_cuda_support", "opal_built_with_cuda_support"), "MV2_USE_CUDA"),
    # hwloc's OS devices of NVIDIA GPUs: backends NVML and CUDA, the UUID in NVIDIAUUID; NCCL's XML gives a GPU
    # the PCI class NVIDIA's data-centre GPUs report, 0x0302 (3D controller)
    xml=XmlNames(("0x10de",), ("NVML", "CUDA"), "NVIDIAUUID", "0x030200"),
)
AMD = Platform(
    key="amd", label="AMD", hardware=True, engine="rocm",
    engine_factory="linkscope.engines.rocm:RocmEngine", engine_probe="linkscope.engines.rocm:probe",
    runtime="rocm", cupy_wheel="cupy-rocm-7-0 (pip install 'linkscope[rocm7]'; ROCm 6: docs/amd.md)",
    discover="linkscope.discovery.amdsmi:discover_platform", discovery_backends=("amdsmi", "rocm"),
    counters="linkscope.counters.amdsmi:open_amdsmi", health_facts="linkscope.discovery.amdsmi:live_facts",
    collective_library="RCCL",
    env_rows=(("rocm", "linkscope.envinfo:rocm_smi_row"), ("rocm install", "linkscope.envinfo:rocm_install_row"),
              ("rocm engine", "linkscope.envinfo:rocm_engine_row")),
    runtime_traits=_amd.RUNTIME, kernels=_amd.KERNELS, launch="linkscope.mapping.amd:LAUNCH",
    facts="linkscope.discovery.amdsmi:FACTS",
    ordinal_field="hip_ordinal",
    fabric=LinkFabric("xgmi", "xGMI", "xgmi", "no active xGMI link"),
    mpi_support=MpiGpuSupport("rocm", "ROCm", "rocm:device", "MPIX_Query_rocm_support"),
    # hwloc's OS devices of AMD GPUs: backend RSMI, the UUID in AMDUUID; an exported (RCCL) XML gives a GPU
    # class 0x038000 (display controller), as the exporter always has (which class each Instinct part reports
    # was not checked here)
    xml=XmlNames(("0x1002",), ("RSMI",), "AMDUUID", "0x038000"),
)
SIM = Platform(key="sim", label="simulated (the fabric model)", hardware=False, engine="sim",
               engine_factory="linkscope.engines.sim:SimEngine")

PLATFORMS: tuple[Platform, ...] = (NVIDIA, AMD, SIM)


def hardware_platforms() -> tuple[Platform, ...]:
    return tuple(p for p in PLATFORMS if p.hardware)


def by_key(key: str) -> Platform:
    for p in PLATFORMS:
        if p.key == key:
            return p
    raise UserError(f"unknown platform {key!r}", hint=f"known: {', '.join(p.key for p in PLATFORMS)}")


def of_vendor(vendor: str | None) -> Platform | None:
    """The hardware platform of a device vendor key (``Device.vendor``), None for another or none."""
    return next((p for p in PLATFORMS if p.hardware and p.key == vendor), None)


def of_runtime(runtime: str) -> Platform:
    """The platform whose CuPy build is ``runtime`` (``cuda`` / ``rocm``)."""
    for p in PLATFORMS:
        if p.runtime == runtime:
            return p
    raise ValueError(f"runtime must be one of {', '.join(p.runtime for p in PLATFORMS if p.runtime)}, got {runtime!r}")


def of_cupy_build(is_hip: bool) -> Platform | None:
    """The platform whose CuPy build reports ``cupy.cuda.runtime.is_hip == is_hip`` (None: no such row)."""
    return next((p for p in PLATFORMS if p.runtime_traits is not None and p.runtime_traits.cupy_is_hip == is_hip), None)


def launch_of(vendor: str | None) -> LaunchEnvironment | None:
    """The launch environment of a vendor's platform, None when it has none (or the vendor is unknown)."""
    platform = of_vendor(vendor)
    return load(platform.launch) if platform is not None and platform.launch else None


def launch_environments() -> tuple[LaunchEnvironment, ...]:
    """Every hardware platform's launch environment, in table order (a mapping of unknown vendor sets all)."""
    return tuple(load(p.launch) for p in PLATFORMS if p.hardware and p.launch)


def pcie_probe_for(vendors: Any) -> Any:
    """The PCIe link-state reader of the first platform among ``vendors`` (device vendor keys) that
    has one, None when none has."""
    present = set(vendors)
    ref = next((p.pcie_probe for p in PLATFORMS if p.hardware and p.key in present and p.pcie_probe), None)
    return load(ref) if ref else None


def link_fabric(key: str | None) -> LinkFabric:
    """The fabric named ``key`` in a record. A record naming none is NVML's (its counters and link
    health were written before any other fabric's): NVLink. A key no row has is named as it is."""
    if key is None:
        assert NVIDIA.fabric is not None
        return NVIDIA.fabric
    found = next((p.fabric for p in PLATFORMS if p.fabric is not None and p.fabric.key == key), None)
    return found or LinkFabric(key, key, key, f"no active {key} link")


def mpi_supports() -> tuple[MpiGpuSupport, ...]:
    """Every platform's MPI device-buffer support, in table order."""
    return tuple(p.mpi_support for p in PLATFORMS if p.mpi_support is not None)


def xml_names() -> dict[str, XmlNames]:
    """Vendor key -> what hwloc's and NCCL's XML call its GPUs, in table order."""
    return {p.key: p.xml for p in PLATFORMS if p.xml is not None}


def vendor_of_pci_id(vendor_id: str) -> str | None:
    """The vendor key of a GPU's PCI vendor id (``0x10de``, any case), None when no row has it."""
    wanted = vendor_id.lower()
    return next((key for key, names in xml_names().items() if wanted in names.pci_vendor_ids), None)


def by_engine(name: str) -> Platform | None:
    return next((p for p in PLATFORMS if p.engine == name), None)


def vendor_of_runtime() -> dict[str, str]:
    """CuPy build (``cuda`` / ``rocm``) -> vendor key."""
    return {p.runtime: p.key for p in PLATFORMS if p.runtime}


def engine_names() -> tuple[str, ...]:
    """``--backend`` choices: ``auto`` and every platform's engine, in table order."""
    return ("auto", *(p.engine for p in PLATFORMS))


def load(ref: str) -> Any:
    """The object a ``"package.module:attribute"`` reference names (imported now)."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
