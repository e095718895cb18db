"""The topology model: what the machine is (devices and links), nothing about how we found out.

Frozen dataclasses (read-only once built). A Topology is a graph:

* devices: GPUs (or AMD GCDs), CPUs (one per NUMA node / socket, with its cores and host memory),
  PCIe switches, PCIe host bridges (root complexes), NVSwitch planes, NICs, network switches;
* links: undirected physical connections whose capacity is the same **per direction**
  (``capacity_gb_per_s = count * link_gb_per_s``), with a kind (nvlink, xgmi, pcie, upi, network)
  and a provenance saying where the number came from.

An NVSwitch plane of several physical switch chips is modelled as one ``nvswitch`` device: every
GPU's NVLinks to it are one bonded link with the GPU's total link count (traffic is striped over
all the chips, so the bottleneck is the GPU's own link count). ``attributes["physical_switches"]``
keeps the chip count.

GPU numbering: ``Device.index`` is the topology's GPU number, the one every result refers to
(``src``/``dst``). ``ordinals`` (per platform) and ``nvml_index`` are separate optional fields
because they can disagree (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER); the PCI bus id is the stable key.
"""
from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from itertools import repeat
from types import MappingProxyType
from typing import Any, TypeVar

from ..errors import TopologyError

SCHEMA_VERSION = 1

# Physical bounds (far above any hardware, low enough to catch a typo or an overflow): a link of
# 1e308 GB/s, or a 10 s hop, would turn every prediction and mapping cost into nonsense.
MAX_LINK_GB_PER_S = 100_000.0   # one link, per direction (NVLink 5: 50 GB/s per link, 900 per GPU)
MAX_LINK_COUNT = 1024           # bonded links between two devices
MAX_LATENCY_US = 1_000_000.0    # one hop
MAX_NIC_GBIT_PER_S = 1_000_000.0
MAX_MEMORY_BYTES = 2**60


class DeviceKind(str, Enum):
    GPU = "gpu"
    CPU = "cpu"
    PCIE_SWITCH = "pcie_switch"
    HOST_BRIDGE = "host_bridge"
    NVSWITCH = "nvswitch"
    NIC = "nic"
    NETWORK_SWITCH = "network_switch"


class LinkKind(str, Enum):
    NVLINK = "nvlink"
    XGMI = "xgmi"
    PCIE = "pcie"
    UPI = "upi"
    NETWORK = "network"


#: the GPU-to-GPU fabrics (a vendor's fabric adds its kind here and a level family in ``levels``)
GPU_FABRICS = frozenset({LinkKind.NVLINK, LinkKind.XGMI})


class Provenance(str, Enum):
    """Where a number came from (STYLE.md C4)."""

    DATASHEET = "datasheet"
    OS = "os"
    MEASURED = "measured"
    CALIBRATED = "calibrated"
    PREDICTED = "predicted"
    SIMULATED = "simulated"
    USER = "user"
    SYNTHETIC = "synthetic"


@dataclass(frozen=True, slots=True)
class Device:
    """One device of the node. Fields that do not apply to a kind stay None.

    Attributes:
        id: unique name within the topology, e.g. ``gpu0``, ``cpu1``, ``sw0``, ``nvswitch``, ``mlx5_0``.
        kind: what it is.
        name: product name (``NVIDIA H200``, ``Xeon 8480C``, ``ConnectX-7``).
        index: GPU number in this topology (GPUs only; 0..n-1), used by results as src/dst.
        vendor: ``nvidia``, ``amd``, ``intel``, ``mellanox``, ...
        uuid: GPU UUID where known.
        pci_bus_id: normalised ``0000:07:00.0`` where known.
        memory_bytes: device memory (GPU) or host memory (CPU) in bytes.
        numa_node: NUMA node the device is attached to (CPU: its own node).
        ordinals: the device's number in each platform's runtime, keyed by platform (``platforms``
            row key: ``{"nvidia": 0}`` is the CUDA ordinal, ``{"amd": 2}`` the HIP ordinal with no
            visibility variable set); files before it stored ``cuda_ordinal`` / ``hip_ordinal``
            (read by ``topology/io``, never written).
        nvml_index: the driver's index, separate on purpose.
        cores: logical CPU ids (CPU devices).
        socket: physical package of a CPU device.
        package: physical package of a GPU (e.g. the MI250X holding two GCDs).
        device_name: OS name of a NIC (``mlx5_0``, ``hsn0``).
        line_rate_gbit_per_s: NIC line rate in Gbit/s (network convention).
        memory_bw_gb_per_s: host memory bandwidth of a CPU / NUMA node, per direction, GB/s.
        attributes: other read-only facts (strings/numbers), e.g. ``physical_switches``.
    """

    id: str
    kind: DeviceKind
    name: str = ""
    index: int | None = None
    vendor: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_bytes: int | None = None
    numa_node: int | None = None
    ordinals: Mapping[str, int] = field(default_factory=dict, hash=False, compare=True)
    nvml_index: int | None = None
    cores: tuple[int, ...] = ()
    socket: int | None = None
    package: int | None = None
    device_name: str | None = None
    line_rate_gbit_per_s: float | None = None
    memory_bw_gb_per_s: float | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def ordinal(self, platform: str | None = None) -> int | None:
        """The device's runtime ordinal on ``platform`` (default: its own vendor's), None when not known."""
        key = self.vendor if platform is None else platform
        return self.ordinals.get(key) if key else None

    @property
    def is_gpu(self) -> bool:
        return self.kind is DeviceKind.GPU

    @property
    def label(self) -> str:
        """Short display label: ``GPU0``, ``CPU1``, ``mlx5_0``, ``sw0``."""
        if self.kind is DeviceKind.GPU and self.index is not None:
            return f"GPU{self.index}"
        if self.kind is DeviceKind.NIC and self.device_name:
            return self.device_name
        return self.id


@dataclass(frozen=True, slots=True)
class Link:
    """An undirected physical connection; capacity is per direction.

    Attributes:
        a, b: device ids.
        kind: nvlink | xgmi | pcie | upi | network.
        count: number of bonded links (NV18 = 18 NVLinks).
        link_gb_per_s: capacity of one link in one direction, GB/s (10**9 B/s).
        latency_us: one-way latency of the hop in microseconds, where known.
        provenance: where the capacity came from.
        source: citation or discovery note for the numbers.
        generation: e.g. ``NVLink4``, ``PCIe Gen5 x16``.
    """

    a: str
    b: str
    kind: LinkKind
    count: int = 1
    link_gb_per_s: float = 0.0
    latency_us: float | None = None
    provenance: Provenance = Provenance.DATASHEET
    source: str = ""
    generation: str | None = None

    @property
    def capacity_gb_per_s(self) -> float:
        """Per-direction capacity of the bonded link."""
        return self.count * self.link_gb_per_s

    def other(self, device_id: str) -> str:
        if device_id == self.a:
            return self.b
        if device_id == self.b:
            return self.a
        raise KeyError(device_id)

    def joins(self, x: str, y: str) -> bool:
        return {self.a, self.b} == {x, y}


LEGACY_MODEL_PARAM_KEYS = ("p2p_max_level", "p2p_max_level_source", "no_peer_access", "nic_devices")
"""Keys that files (and callers) written before ``PeerAccess`` / ``RunChoices`` kept in ``model_params``;
a Topology built with them moves them into those typed fields (``migrate_model_params``)."""


@dataclass(frozen=True)
class PeerAccess:
    """Facts of the machine about GPU peer (P2P) access that its links do not say.

    Attributes:
        max_level: the farthest pair level (nvidia-smi code: PIX, PXB, PHB, NODE, SYS) at which GPUs
            have peer access; farther pairs (e.g. across QPI on a K80 node) have none. None: no limit stated.
        source: where that limit comes from (a citation or a discovery note).
        denied_pairs: GPU index pairs without peer access (each ``(low, high)``), beyond ``max_level``.
    """

    max_level: str | None = None
    source: str = ""
    denied_pairs: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        pairs = []
        for pair in self.denied_pairs:
            try:
                a, b = (int(x) for x in pair)
            except (TypeError, ValueError):
                raise TopologyError(f"peer_access.denied_pairs: {pair!r} is not a pair of GPU indices") from None
            pairs.append((min(a, b), max(a, b)))
        object.__setattr__(self, "denied_pairs", tuple(sorted(set(pairs))))
        if self.max_level is not None and not isinstance(self.max_level, str):
            raise TopologyError(f"peer_access.max_level must be a level code such as PHB, got {self.max_level!r}")

    @property
    def is_default(self) -> bool:
        return self == PeerAccess()


@dataclass(frozen=True)
class RunChoices:
    """Explicit choices of a run, not facts of the machine, carried with its topology so that the
    model, the mapping and the engines all go by them.

    Attributes:
        nic_devices: the NIC choice for transfers between nodes, as UCX_NET_DEVICES / NCCL_IB_HCA
            name NICs (``model.nics``); None: the nearest NIC.
    """

    nic_devices: str | None = None

    @property
    def is_default(self) -> bool:
        return self == RunChoices()


def cached_on(obj: object, key: str, build: Callable[[], Any]) -> Any:
    """``build()`` kept on the immutable ``obj`` (a frozen dataclass) under ``key``: a look-up table
    made on first use and reused."""
    found = obj.__dict__.get(key)
    if found is None:
        found = build()
        object.__setattr__(obj, key, found)
    return found


@dataclass(frozen=True)
class Topology:
    """A node (or cluster) as devices and links.

    Attributes:
        name: preset name, hostname or synthetic spec.
        devices: all devices; GPUs carry ``index`` 0..n-1.
        links: undirected links.
        is_this_system: True only when discovered live on the running machine.
        source: how it was obtained (``nvml+sysfs``, ``preset:dgx-h100``, ``synthetic:nvswitch:8``, a file).
        description: one human sentence.
        sources: citations for the numbers in it.
        model_params: numeric parameters of the fabric model (engine limits, efficiencies, overheads)
            where calibrated or stated by a preset; the model package defines their meaning.
        notes: warnings from discovery (a fallback, a missing file), kept with the data.
        peer_access: facts on GPU peer access (a P2P level limit, pairs without it).
        run_choices: choices of the run carried with the topology (the NIC choice).
    """

    name: str
    devices: tuple[Device, ...]
    links: tuple[Link, ...]
    is_this_system: bool = False
    source: str = ""
    description: str = ""
    sources: tuple[str, ...] = ()
    model_params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    notes: tuple[str, ...] = ()
    peer_access: PeerAccess = field(default_factory=PeerAccess)
    run_choices: RunChoices = field(default_factory=RunChoices)

    def __post_init__(self) -> None:
        migrate_model_params(self)
        validate(self)

    def __hash__(self) -> int:
        """The hash of the hashed fields (model_params is not), as the dataclass would compute it, once:
        the tuples of a cluster's thousands of devices and links take milliseconds to hash, and routes and
        levels are cached per topology (a 20-rack NVL72 check hashed it 9 million times, 100 s)."""
        return int(self._cached("_hash", lambda: hash((self.name, self.devices, self.links, self.is_this_system,
                                                         self.source, self.description, self.sources, self.notes,
                                                         self.peer_access, self.run_choices))))

    # ---- lookups -------------------------------------------------------------------------
    # Built once per topology on first use (the topology is immutable), so that a look-up per device of
    # a cluster costs O(1) and loops over GPUs stay linear.
    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        return cached_on(self, key, build)

    @property
    def by_id(self) -> Mapping[str, Device]:
        return self._cached("_by_id", lambda: MappingProxyType(dict(zip(self.columns().index, self.devices))))

    def device(self, device_id: str) -> Device:
        found = self.by_id.get(device_id)
        if found is None:
            raise TopologyError(f"no device {device_id!r} in topology {self.name!r}")
        return found

    @property
    def gpus(self) -> tuple[Device, ...]:
        """GPUs ordered by their topology index."""
        def build() -> tuple[Device, ...]:
            gpu = list(DeviceKind).index(DeviceKind.GPU)
            at = self.columns().device_kind == gpu
            return tuple(sorted(map(self.devices.__getitem__, at.nonzero()[0].tolist()), key=lambda d: d.index or 0))

        return self._cached("_gpus", build)

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def gpu(self, index: int) -> Device:
        """The GPU with topology index ``index``; a clear error listing the valid ones otherwise."""
        by_index = self._cached("_gpu_by_index", lambda: MappingProxyType({d.index: d for d in self.gpus}))
        try:
            found = by_index.get(index)
        except TypeError:  # unhashable: not an index
            found = None
        if found is None:
            raise TopologyError(
                f"GPU {index} does not exist in {self.name!r}",
                hint=f"valid GPU indices: 0..{self.gpu_count - 1}" if self.gpu_count else "this topology has no GPU",
            )
        return found

    def of_kind(self, kind: DeviceKind) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.kind is kind)

    def links_of(self, device_id: str) -> tuple[Link, ...]:
        def build() -> Mapping[str, tuple[Link, ...]]:
            table: dict[str, list[Link]] = {}
            for link in self.links:
                table.setdefault(link.a, []).append(link)
                if link.b != link.a:
                    table.setdefault(link.b, []).append(link)
            return MappingProxyType({k: tuple(v) for k, v in table.items()})

        return self._cached("_links_of", build).get(device_id, ())

    def neighbours(self, device_id: str) -> tuple[str, ...]:
        return tuple(link.other(device_id) for link in self.links_of(device_id))

    def columns(self) -> TopologyColumns:
        """The devices and links as arrays (``TopologyColumns``), made in one pass over each on first use: what
        the fabric model and ``query.node_labels`` read of every element of a cluster, without a Python loop
        per element each."""
        return self._cached("_columns", lambda: TopologyColumns.of(self))

    def replace(self, **changes: Any) -> Topology:
        from dataclasses import replace

        return replace(self, **changes)


#: Position of each kind in its enum, by the member's identity: members are singletons, and a dict keyed by
#: the member would hash it through Enum.__hash__, a Python call per element.
_DEVICE_KIND_CODE = {id(k): i for i, k in enumerate(DeviceKind)}
_LINK_KIND_CODE = {id(k): i for i, k in enumerate(LinkKind)}


def _kind_codes(kinds: list[Any], table: dict[int, int], enum: type[Enum]) -> Any:
    """Position of each kind in ``enum`` (int8 array)."""
    import numpy as np

    try:
        return np.fromiter(map(table.__getitem__, map(id, kinds)), dtype=np.int8, count=len(kinds))
    except KeyError:  # a kind given as its text
        members = list(enum)
        return np.array([members.index(enum(k)) for k in kinds], dtype=np.int8)


@dataclass(frozen=True, eq=False)
class TopologyColumns:
    """A topology's devices and links as arrays, in topology order (``Topology.columns``).

    Attributes:
        index: device id -> position in ``devices``.
        device_kind: position of each device's kind in ``DeviceKind``.
        link_a, link_b: positions of each link's ends.
        link_kind: position of each link's kind in ``LinkKind``.
        link_count: bonded links of each link.
        link_gb_per_s: one link's GB/s per direction.
        link_latency_us: the link's latency_us, NaN where not given.
        link_generation: each link's generation text (None where not given).
    """

    index: Mapping[str, int]
    device_kind: Any
    link_a: Any
    link_b: Any
    link_kind: Any
    link_count: Any
    link_gb_per_s: Any
    link_latency_us: Any
    link_generation: tuple[str | None, ...]

    @classmethod
    def of(cls, topology: Topology) -> TopologyColumns:
        # one attribute per pass (``map(attrgetter(name))``, C loops): reading several at once would make a tuple
        # per element, and hundreds of thousands of new tuples set off the cyclic garbage collector's full passes
        # over the whole heap, which made this grow faster than the cluster
        from operator import attrgetter

        import numpy as np

        devices, links = topology.devices, topology.links
        ids = list(map(attrgetter("id"), devices))
        index = MappingProxyType(dict(zip(ids, range(len(ids)))))
        n = len(links)

        def column(name: str, dtype: Any) -> Any:
            return np.fromiter(map(attrgetter(name), links), dtype=dtype, count=n)

        return cls(index=index, device_kind=_kind_codes(list(map(attrgetter("kind"), devices)), _DEVICE_KIND_CODE, DeviceKind),
                   link_a=np.fromiter(map(index.__getitem__, map(attrgetter("a"), links)), dtype=np.int64, count=n),
                   link_b=np.fromiter(map(index.__getitem__, map(attrgetter("b"), links)), dtype=np.int64, count=n),
                   link_kind=_kind_codes(list(map(attrgetter("kind"), links)), _LINK_KIND_CODE, LinkKind),
                   link_count=column("count", np.int64), link_gb_per_s=column("link_gb_per_s", float),
                   link_latency_us=np.array(list(map(attrgetter("latency_us"), links)), dtype=float).reshape(n),
                   link_generation=tuple(map(attrgetter("generation"), links)))


def migrate_model_params(topology: Topology) -> None:
    """Move the legacy keys of ``model_params`` (LEGACY_MODEL_PARAM_KEYS: older files, older callers)
    into ``peer_access`` and ``run_choices``; a key given there wins over the typed field it replaces."""
    params = topology.model_params or {}
    legacy = {k: params[k] for k in LEGACY_MODEL_PARAM_KEYS if k in params}
    if not legacy:
        return
    from dataclasses import replace

    peer = topology.peer_access
    if "p2p_max_level" in legacy:
        level = legacy["p2p_max_level"]
        peer = replace(peer, max_level=None if level is None else str(level),
                       source=str(legacy.get("p2p_max_level_source", "")))
    elif "p2p_max_level_source" in legacy:
        peer = replace(peer, source=str(legacy["p2p_max_level_source"]))
    if "no_peer_access" in legacy:
        pairs = legacy["no_peer_access"] or ()
        if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
            raise TopologyError(f"model_params.no_peer_access must be a list of GPU index pairs, got {pairs!r}")
        peer = replace(peer, denied_pairs=tuple(pairs))
    choices = topology.run_choices
    if "nic_devices" in legacy:
        nic = legacy["nic_devices"]
        choices = replace(choices, nic_devices=None if nic is None else str(nic))
    object.__setattr__(topology, "peer_access", peer)
    object.__setattr__(topology, "run_choices", choices)
    object.__setattr__(topology, "model_params", {k: v for k, v in params.items() if k not in legacy})


def validate(topology: Topology) -> None:
    """Structural checks: unique ids, links between existing devices, GPU indices 0..n-1,
    positive capacities, no self links. Raises TopologyError naming the culprit."""
    ids: set[str] = set()
    for d in topology.devices:
        if not isinstance(d.kind, DeviceKind):
            raise TopologyError(f"device {d.id!r} has an unknown kind {d.kind!r}")
        if d.id in ids:
            raise TopologyError(f"device id {d.id!r} appears twice in topology {topology.name!r}")
        ids.add(d.id)
    indices = sorted(d.index for d in topology.devices if d.is_gpu and d.index is not None)
    gpu_n = sum(1 for d in topology.devices if d.is_gpu)
    if indices != list(range(gpu_n)):
        raise TopologyError(
            f"GPU indices in topology {topology.name!r} must be 0..{gpu_n - 1} once each, got {indices}"
        )
    for link in topology.links:
        for end in (link.a, link.b):
            if end not in ids:
                raise TopologyError(f"link {link.a}–{link.b} names a device that does not exist: {end!r}")
        if link.a == link.b:
            raise TopologyError(f"link from {link.a!r} to itself")
        if link.count < 1:
            raise TopologyError(f"link {link.a}–{link.b} has count {link.count}; need >= 1")
        if not link.link_gb_per_s > 0:
            raise TopologyError(f"link {link.a}–{link.b} has no positive bandwidth ({link.link_gb_per_s})")
        if not link.link_gb_per_s <= MAX_LINK_GB_PER_S:
            raise TopologyError(f"link {link.a}–{link.b} claims {link.link_gb_per_s:g} GB/s per link; "
                                f"more than {MAX_LINK_GB_PER_S:g} GB/s is not a physical link")
        if link.count > MAX_LINK_COUNT:
            raise TopologyError(f"link {link.a}–{link.b} has count {link.count}; at most {MAX_LINK_COUNT} bonded links")
        if link.latency_us is not None and not 0 <= link.latency_us <= MAX_LATENCY_US:
            raise TopologyError(f"link {link.a}–{link.b} has latency {link.latency_us:g} us; expected 0 .. {MAX_LATENCY_US:g}")
    for d in topology.devices:
        if d.memory_bytes is not None and not 0 <= d.memory_bytes <= MAX_MEMORY_BYTES:
            raise TopologyError(f"device {d.id!r} has memory_bytes {d.memory_bytes}; expected 0 .. 2**60")
        if d.line_rate_gbit_per_s is not None and not 0 < d.line_rate_gbit_per_s <= MAX_NIC_GBIT_PER_S:
            raise TopologyError(f"device {d.id!r} has line rate {d.line_rate_gbit_per_s:g} Gbit/s; "
                                f"expected above 0, at most {MAX_NIC_GBIT_PER_S:g}")


T = TypeVar("T", Device, Link)


def many(cls: type[T], varying: Mapping[str, Sequence[Any]], **common: Any) -> list[T]:
    """Devices or links that differ only in the ``varying`` fields (one sequence per field, all as long):
    element i equals ``cls(**common, **{name: values[i] for name, values in varying.items()})`` field for
    field (fields left out take their defaults, a fresh one each from a default factory).

    For a cluster's hundreds of thousands: made without a call of the dataclass's ``__init__`` per element, one
    field of every element at a time through the slot's descriptor (a C loop per field; about 2.5 times faster).
    A class with a ``__post_init__`` (none today) is built element by element."""
    lengths = {len(values) for values in varying.values()}
    if len(lengths) > 1:
        raise ValueError(f"varying fields of unequal lengths: {sorted(lengths)}")
    count = lengths.pop() if lengths else 0
    if count == 0:
        return []
    if hasattr(cls, "__post_init__"):  # pragma: no cover - neither Device nor Link has one
        return [cls(**common, **{name: values[i] for name, values in varying.items()}) for i in range(count)]
    first = cls(**common, **{name: values[0] for name, values in varying.items()})  # checks the names, fills defaults
    out = list(map(object.__new__, repeat(cls, count)))
    for f in fields(cls):
        put = getattr(cls, f.name).__set__  # the slot's member descriptor: what the frozen __init__ sets through
        if f.name in varying:
            values: Iterable[Any] = varying[f.name]
        elif f.name not in common and f.default_factory is not MISSING:
            values = [f.default_factory() for _ in range(count)]
        else:
            values = repeat(getattr(first, f.name), count)
        deque(map(put, out, values), maxlen=0)
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a block that makes many long-lived objects without reference cycles
    (a cluster's devices and links): each full collection it would start walks the whole heap, and it starts
    several while hundreds of thousands of objects are made (0.4 s of a 32,768-GPU fat tree's 1.2 s)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def make_topology(
    name: str,
    devices: Iterable[Device],
    links: Iterable[Link],
    **kwargs: Any,
) -> Topology:
    """Build and validate a Topology from iterables."""
    return Topology(name=name, devices=tuple(devices), links=tuple(links), **kwargs)
