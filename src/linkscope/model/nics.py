"""Which NIC(s) a GPU's inter-node traffic uses: one rule for the model, the mapping and ``launch``.

Users choose NICs the way the communication libraries read them:

* ``UCX_NET_DEVICES=mlx5_0:1`` or ``NCCL_IB_HCA=mlx5_0`` - one NIC (a ``:port`` suffix is ignored);
* ``mlx5_0,mlx5_1`` - spread over several: a transfer's bytes are split evenly over the listed NICs
  (UCX multi-rail rendezvous, NCCL with several HCAs);
* ``^mlx5_1`` - every NIC of the node but those (NCCL_IB_HCA's exclusion); ``=mlx5_0`` - exact names;
* ``nearest`` (the default) - the NIC nearest the GPU, equally near NICs taken in turn by the
  GPU's position among its node's GPUs (a function of the GPU, never of the rank running there);
* ``any`` - nothing specified to UCX: its default multi-rail rendezvous spreads large messages over
  up to ``UCX_MAX_RNDV_RAILS`` (default 2) devices of the node, near and far alike.

A name matches a NIC's ``device_name`` exactly, or the part after the node prefix of a multi-node
topology (``n3.mlx5_0`` matches ``mlx5_0``). Names are looked up among the NICs of the GPU's own node.

Who uses it: the model's routes (``routing``), ``bench --nic`` and ``map --nic`` (the CLI reads
``--nic``, else ``choice_in_environment``), the mapping's ``nics_of_rank`` and cross-host costs
(``nics_by_gpu``), and ``launch --nic``, which has no topology and resolves names against the NIC
names a mapping stored (``pick_named``, ``unknown_names``).

>>> parse_nic_spec("mlx5_0:1,mlx5_1").names
('mlx5_0', 'mlx5_1')
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..errors import ConfigError
from ..topology import query
from ..topology.model import Device, DeviceKind, Topology

UCX_MAX_RNDV_RAILS = 2  # UCX default of UCX_MAX_RNDV_RAILS (ucx_info -c)
NIC_ENV_VARS = ("UCX_NET_DEVICES", "NCCL_IB_HCA")
"""The variables that name a process's NICs, in the order a choice is read from them."""
RULES = ("nearest", "any", "names")


@dataclass(frozen=True)
class NicSpec:
    """A parsed NIC choice. ``rule``: nearest | any | names; ``names`` with ``exclude`` for ``^a,b``."""

    rule: str = "nearest"
    names: tuple[str, ...] = ()
    exclude: bool = False

    @property
    def text(self) -> str:
        if self.rule != "names":
            return self.rule
        return ("^" if self.exclude else "") + ",".join(self.names)


def parse_nic_spec(text: str | None) -> NicSpec:
    """Parse a UCX_NET_DEVICES / NCCL_IB_HCA style value (see the module docstring)."""
    if text is None:
        return NicSpec()
    t = str(text).strip()
    if t in ("", "nearest", "near", "auto"):
        return NicSpec()
    if t in ("any", "all", "unspecified"):
        return NicSpec(rule="any")
    exclude = t.startswith("^")
    t = t.lstrip("^=")
    names = tuple(dict.fromkeys(n.split(":")[0].strip() for n in t.split(",") if n.strip()))
    if not names:
        raise ConfigError(f"no NIC name in {text!r}", hint="e.g. mlx5_0, mlx5_0,mlx5_1, ^mlx5_1, nearest or any")
    return NicSpec(rule="names", names=names, exclude=exclude)


def choice_in_environment(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """``(value, variable)`` of the first of NIC_ENV_VARS set (non-empty) in ``environ``, else None."""
    for var in NIC_ENV_VARS:
        if environ.get(var):
            return environ[var], var
    return None


def name_matches(nic_name: str, wanted: str) -> bool:
    """``wanted`` names the NIC called ``nic_name``: exactly, or after a node prefix (``n3.mlx5_0``)."""
    return nic_name == wanted or nic_name.rsplit(".", 1)[-1] == wanted


def unknown_names(spec: NicSpec, nic_names: Sequence[str]) -> tuple[str, ...]:
    """The names of a ``names`` spec that match none of ``nic_names``."""
    return tuple(n for n in spec.names if not any(name_matches(have, n) for have in nic_names))


def pick_named(spec: NicSpec, nic_names: Sequence[Sequence[str]], where: str) -> tuple[int, ...]:
    """Positions of the NICs a ``names`` spec picks (``^``: all but those), each NIC given by its
    names (OS name first); ConfigError naming ``where``'s NICs when it picks none."""
    picked = tuple(i for i, names in enumerate(nic_names)
                   if any(name_matches(have, n) for have in names for n in spec.names) != spec.exclude)
    if not picked:
        have = ", ".join(names[0] for names in nic_names) or "none"
        raise ConfigError(f"NIC choice {spec.text!r} matches no NIC of {where}", hint=f"its NICs: {have}")
    return picked


def _node_of(topology: Topology) -> dict[str, int]:
    """Each device's node (``query.node_labels``) by device id."""
    return dict(zip((d.id for d in topology.devices), query.node_labels(topology).tolist()))


def choose_from(spec: NicSpec, gpu: Device, nics: tuple[Device, ...], nearest: tuple[Device, ...],
                local_index: int | None = None) -> tuple[Device, ...]:
    """The NICs ``spec`` picks for ``gpu`` among its node's ``nics`` (``nearest``: the nearest ones;
    ties go by the GPU's position among its node's GPUs, ``local_index``)."""
    if not nics:
        return ()
    if spec.rule == "nearest":
        if not nearest:
            return ()
        return (nearest[(gpu.index or 0 if local_index is None else local_index) % len(nearest)],)
    if spec.rule == "any":
        ordered = list(nearest) + [n for n in nics if n not in nearest]
        return tuple(ordered[:UCX_MAX_RNDV_RAILS])
    picked = pick_named(spec, [(n.device_name or n.id, n.id) for n in nics], f"{gpu.label}'s node")
    return tuple(nics[i] for i in picked)


def as_spec(spec: NicSpec | str | None) -> NicSpec:
    return spec if isinstance(spec, NicSpec) else parse_nic_spec(spec)


def nic_choice_of(topology: Topology | None, spec: NicSpec | str | None = None) -> NicSpec:
    """``spec`` when given, else the topology's own choice (``run_choices.nic_devices``, set by
    ``with_nic_choice``), else nearest: what the model, the mapping and ``bench`` go by."""
    if spec is None and topology is not None:
        spec = topology.run_choices.nic_devices
    return as_spec(spec)


def nics_by_gpu(topology: Topology, gpus: Iterable[int], spec: NicSpec | str | None = None,
                ) -> dict[int, tuple[Device, ...]]:
    """``select_nics`` for each of ``gpus`` (GPU indices), the topology's nodes found once.

    The rule depends on the GPU alone (never on which rank runs there), so the mapping,
    ``launch`` and the model's routes agree GPU by GPU: ``nearest`` spreads a GPU over its
    equally near NICs by its position among its node's GPUs (GPU 2k -> the first NIC of a switch,
    GPU 2k+1 -> the second)."""
    spec = as_spec(spec)
    wanted = sorted(set(int(g) for g in gpus))
    if not wanted:
        return {}
    node = _node_of(topology)
    nics_of: dict[int, list[Device]] = {}
    gpus_of: dict[int, list[int]] = {}
    for d in topology.devices:
        if d.kind is DeviceKind.NIC:
            nics_of.setdefault(node[d.id], []).append(d)
        elif d.is_gpu:
            gpus_of.setdefault(node[d.id], []).append(d.index or 0)
    out: dict[int, tuple[Device, ...]] = {}
    for index in wanted:
        g = topology.gpu(index)
        k = node[g.id]
        nics = tuple(nics_of.get(k, ()))
        local = sorted(gpus_of[k]).index(g.index or 0)
        nearest = tuple(n for n in query.nearest_nics(topology, g) if node[n.id] == k) \
            if spec.rule != "names" and nics else ()
        out[index] = choose_from(spec, g, nics, nearest, local)
    return out


def select_nics(topology: Topology, gpu: int | Device, spec: NicSpec | str | None = None) -> tuple[Device, ...]:
    """The NIC(s) ``gpu``'s inter-node traffic uses under ``spec`` (a NicSpec or its text).

    The one function the model, the mapping and ``launch`` share; empty when the node has no NIC.
    """
    g = topology.gpu(gpu) if isinstance(gpu, int) else gpu
    return nics_by_gpu(topology, (g.index or 0,), spec)[g.index or 0]


def with_nic_choice(topology: Topology, choice: str | None) -> Topology:
    """``topology`` whose model uses ``choice`` for inter-node transfers (``run_choices.nic_devices``).

    Checks the names against the topology's NICs (one clear error naming the valid ones)."""
    if choice is None:
        return topology
    spec = parse_nic_spec(choice)
    if spec.rule == "names":
        nics = topology.of_kind(DeviceKind.NIC)
        unknown = unknown_names(spec, [name for d in nics for name in (d.device_name or d.id, d.id)])
        if unknown:
            have = ", ".join(sorted({(d.device_name or d.id).rsplit(".", 1)[-1] for d in nics})) or "none"
            raise ConfigError(f"no NIC named {', '.join(unknown)} in {topology.name!r}", hint=f"its NICs: {have}")
    return topology.replace(run_choices=replace(topology.run_choices, nic_devices=spec.text))
