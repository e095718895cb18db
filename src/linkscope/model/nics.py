"""Which NIC(s) a GPU's inter-node traffic uses: one rule for the model, the mapping and ``launch``.

Users choose NICs the way the communication libraries read them:

* ``UCX_NET_DEVICES=mlx5_0:1`` or ``NCCL_IB_HCA=mlx5_0`` - one NIC (a ``:port`` suffix is ignored);
* ``mlx5_0,mlx5_1`` - spread over several: a transfer's bytes are split evenly over the listed NICs
  (UCX multi-rail rendezvous, NCCL with several HCAs);
* ``^mlx5_1`` - every NIC of the node but those (NCCL_IB_HCA's exclusion); ``=mlx5_0`` - exact names;
* ``nearest`` (the default) - the NIC nearest the GPU, ties spread by the GPU's local order: what
  linkscope's mapping emits;
* ``any`` - nothing specified to UCX: its default multi-rail rendezvous spreads large messages over
  up to ``UCX_MAX_RNDV_RAILS`` (default 2) devices of the node, near and far alike.

A name matches a NIC's ``device_name`` exactly, or the part after the node prefix of a multi-node
topology (``n3.mlx5_0`` matches ``mlx5_0``). Names are looked up among the NICs of the GPU's own node.

>>> parse_nic_spec("mlx5_0:1,mlx5_1").names
('mlx5_0', 'mlx5_1')
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..topology import query
from ..topology.model import Device, DeviceKind, LinkKind, Topology

UCX_MAX_RNDV_RAILS = 2  # UCX default of UCX_MAX_RNDV_RAILS (ucx_info -c)
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


def nic_matches(nic: Device, name: str) -> bool:
    dn = nic.device_name or nic.id
    return dn == name or dn.rsplit(".", 1)[-1] == name or nic.id == name


def node_nics(topology: Topology, gpu: Device) -> tuple[Device, ...]:
    """The NICs of a GPU's node (reachable without a network link), in topology order."""
    seen = _node_members(topology, gpu)
    return tuple(d for d in topology.devices if d.kind is DeviceKind.NIC and d.id in seen)


def _node_members(topology: Topology, gpu: Device) -> set[str]:
    adjacency: dict[str, list[str]] = {}
    for link in topology.links:
        if link.kind is LinkKind.NETWORK:
            continue
        adjacency.setdefault(link.a, []).append(link.b)
        adjacency.setdefault(link.b, []).append(link.a)
    seen = {gpu.id}
    todo = [gpu.id]
    while todo:
        here = todo.pop()
        for nxt in adjacency.get(here, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


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
    picked = tuple(n for n in nics if any(nic_matches(n, name) for name in spec.names) != spec.exclude)
    if not picked:
        have = ", ".join(n.device_name or n.id for n in nics)
        raise ConfigError(f"NIC choice {spec.text!r} matches no NIC of {gpu.label}'s node", hint=f"its NICs: {have}")
    return picked


def select_nics(topology: Topology, gpu: int | Device, spec: NicSpec | str | None = None) -> tuple[Device, ...]:
    """The NIC(s) ``gpu``'s inter-node traffic uses under ``spec`` (a NicSpec or its text).

    The one function the model, the mapping and ``launch`` share; empty when the node has no NIC.
    """
    if not isinstance(spec, NicSpec):
        spec = parse_nic_spec(spec)
    g = topology.gpu(gpu) if isinstance(gpu, int) else gpu
    members = _node_members(topology, g)
    nics = tuple(d for d in topology.devices if d.kind is DeviceKind.NIC and d.id in members)
    local = sorted(d.index or 0 for d in topology.devices if d.is_gpu and d.id in members).index(g.index or 0)
    nearest = tuple(n for n in query.nearest_nics(topology, g) if n in nics) if spec.rule != "names" else ()
    return choose_from(spec, g, nics, nearest, local)


def with_nic_choice(topology: Topology, choice: str | None) -> Topology:
    """``topology`` whose model uses ``choice`` for inter-node transfers (``model_params["nic_devices"]``).

    Checks the names against the topology's NICs (one clear error naming the valid ones)."""
    if choice is None:
        return topology
    spec = parse_nic_spec(choice)
    if spec.rule == "names":
        nics = topology.of_kind(DeviceKind.NIC)
        unknown = [n for n in spec.names if not any(nic_matches(d, n) for d in nics)]
        if unknown:
            have = ", ".join(sorted({(d.device_name or d.id).rsplit(".", 1)[-1] for d in nics})) or "none"
            raise ConfigError(f"no NIC named {', '.join(unknown)} in {topology.name!r}", hint=f"its NICs: {have}")
    return topology.replace(model_params={**dict(topology.model_params or {}), "nic_devices": spec.text})
