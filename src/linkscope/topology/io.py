"""Versioned JSON form of a Topology: to_dict / from_dict / load / save, with validation that names
the JSON path of a bad value. The JSON Schema of the same form is ``schema/topology-1.json``."""
from __future__ import annotations

import json
import math
from enum import Enum
from pathlib import Path
from typing import Any

from .. import platforms
from ..errors import SchemaError, TopologyError
from ..userfiles import loads_strict, read_text, refuse_malformed
from .model import SCHEMA_VERSION, Device, DeviceKind, Link, LinkKind, PeerAccess, Provenance, RunChoices, Topology

FORMAT = "linkscope.topology"
SCHEMA_FILE = Path(__file__).parent / "schema" / "topology-1.json"

_DEVICE_OPTIONAL = (
    "name", "index", "vendor", "uuid", "pci_bus_id", "memory_bytes", "numa_node", "nvml_index", "socket", "package",
    "device_name", "line_rate_gbit_per_s", "memory_bw_gb_per_s",
)
_INT_FIELDS = {"index", "memory_bytes", "numa_node", "nvml_index", "socket", "package"}
_NUM_FIELDS = {"line_rate_gbit_per_s", "memory_bw_gb_per_s"}


def to_dict(topology: Topology) -> dict[str, Any]:
    devices = []
    for d in topology.devices:
        item: dict[str, Any] = {"id": d.id, "kind": d.kind.value}
        for key in _DEVICE_OPTIONAL:
            value = getattr(d, key)
            if value is not None and value != "":
                item[key] = value
        if d.ordinals:
            item["ordinals"] = dict(d.ordinals)
        if d.cores:
            item["cores"] = list(d.cores)
        if d.attributes:
            item["attributes"] = dict(d.attributes)
        devices.append(item)
    links = []
    for link in topology.links:
        item = {
            "a": link.a,
            "b": link.b,
            "kind": link.kind.value,
            "count": link.count,
            "link_gb_per_s": link.link_gb_per_s,
            "provenance": link.provenance.value,
        }
        if link.latency_us is not None:
            item["latency_us"] = link.latency_us
        if link.source:
            item["source"] = link.source
        if link.generation:
            item["generation"] = link.generation
        links.append(item)
    out: dict[str, Any] = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "name": topology.name,
        "is_this_system": topology.is_this_system,
        "source": topology.source,
        "description": topology.description,
        "sources": list(topology.sources),
        "devices": devices,
        "links": links,
    }
    if topology.model_params:
        out["model_params"] = dict(topology.model_params)
    if not topology.peer_access.is_default:
        peer = topology.peer_access
        out["peer_access"] = {"max_level": peer.max_level, "source": peer.source,
                              "denied_pairs": [list(p) for p in peer.denied_pairs]}
    if not topology.run_choices.is_default:
        out["run_choices"] = {"nic_devices": topology.run_choices.nic_devices}
    if topology.notes:
        out["notes"] = list(topology.notes)
    return out


def _need(obj: dict, key: str, path: str, types: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise SchemaError(f"missing field {key!r}", path=path)
    value = obj[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise SchemaError(f"field {key!r} has the wrong type (bool)", path=f"{path}.{key}")
    if not isinstance(value, types):
        raise SchemaError(f"field {key!r} has the wrong type ({type(value).__name__})", path=f"{path}.{key}")
    return value


def _enum(enum: type[Enum], value: Any, path: str):
    try:
        return enum(value)
    except ValueError:
        valid = ", ".join(e.value for e in enum)
        raise SchemaError(f"unknown value {value!r} (valid: {valid})", path=path) from None


def _finite(value: Any, key: str, path: str) -> Any:
    """A number that JSON can hold again: NaN and infinity (Python's json reads them) are refused."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SchemaError(f"field {key!r} must be a finite number, got {value}", path=path)
    return value


@refuse_malformed("topology")
def from_dict(data: Any, *, is_this_system: bool | None = None) -> Topology:
    """Validate and build. Raises SchemaError with the JSON path of the first bad value."""
    if not isinstance(data, dict):
        raise SchemaError("a topology must be a JSON object", path="$")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise SchemaError(f"not a linkscope topology (format is {fmt!r}, expected {FORMAT!r})", path="$.format")
    version = _need(data, "schema_version", "$", int)
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"topology schema version {version} is newer than this linkscope understands ({SCHEMA_VERSION})",
            hint="upgrade linkscope",
        )
    if version < 1:
        raise SchemaError(f"unknown topology schema version {version}", path="$.schema_version")
    devices = []
    for i, item in enumerate(_need(data, "devices", "$", list)):
        path = f"$.devices[{i}]"
        if not isinstance(item, dict):
            raise SchemaError("a device must be an object", path=path)
        kwargs: dict[str, Any] = {
            "id": _need(item, "id", path, str),
            "kind": _enum(DeviceKind, _need(item, "kind", path, str), f"{path}.kind"),
        }
        for key in _DEVICE_OPTIONAL:
            if key in item and item[key] is not None:
                value = item[key]
                if key in _INT_FIELDS and (isinstance(value, bool) or not isinstance(value, int)):
                    raise SchemaError(f"field {key!r} must be an integer", path=f"{path}.{key}")
                if key in _NUM_FIELDS and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise SchemaError(f"field {key!r} must be a number", path=f"{path}.{key}")
                if key in _NUM_FIELDS:
                    _finite(value, key, f"{path}.{key}")
                if key not in _INT_FIELDS | _NUM_FIELDS and not isinstance(value, str):
                    raise SchemaError(f"field {key!r} must be a string", path=f"{path}.{key}")
                kwargs[key] = value
        ordinals = _ordinals(item, path)
        if ordinals:
            kwargs["ordinals"] = ordinals
        if "cores" in item:
            cores = item["cores"]
            if not isinstance(cores, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in cores):
                raise SchemaError("cores must be a list of integers", path=f"{path}.cores")
            kwargs["cores"] = tuple(cores)
        if "attributes" in item:
            if not isinstance(item["attributes"], dict):
                raise SchemaError("attributes must be an object", path=f"{path}.attributes")
            kwargs["attributes"] = dict(item["attributes"])
        devices.append(Device(**kwargs))
    links = []
    for i, item in enumerate(_need(data, "links", "$", list)):
        path = f"$.links[{i}]"
        if not isinstance(item, dict):
            raise SchemaError("a link must be an object", path=path)
        count = _need(item, "count", path, int)
        rate = _finite(_need(item, "link_gb_per_s", path, (int, float)), "link_gb_per_s", f"{path}.link_gb_per_s")
        latency = item.get("latency_us")
        if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
            raise SchemaError("latency_us must be a number", path=f"{path}.latency_us")
        if latency is not None and _finite(latency, "latency_us", f"{path}.latency_us") < 0:
            raise SchemaError(f"latency_us must not be negative, got {latency}", path=f"{path}.latency_us")
        links.append(
            Link(
                a=_need(item, "a", path, str),
                b=_need(item, "b", path, str),
                kind=_enum(LinkKind, _need(item, "kind", path, str), f"{path}.kind"),
                count=count,
                link_gb_per_s=float(rate),
                latency_us=None if latency is None else float(latency),
                provenance=_enum(Provenance, item.get("provenance", "datasheet"), f"{path}.provenance"),
                source=str(item.get("source", "")),
                generation=item.get("generation"),
            )
        )
    model_params = data.get("model_params", {})
    if not isinstance(model_params, dict):
        raise SchemaError("model_params must be an object", path="$.model_params")
    return Topology(
        peer_access=_peer_access(data.get("peer_access")),
        run_choices=_run_choices(data.get("run_choices")),
        name=_need(data, "name", "$", str),
        devices=tuple(devices),
        links=tuple(links),
        is_this_system=bool(data.get("is_this_system", False)) if is_this_system is None else is_this_system,
        source=str(data.get("source", "")),
        description=str(data.get("description", "")),
        sources=tuple(str(s) for s in data.get("sources", [])),
        model_params=model_params,
        notes=tuple(str(s) for s in data.get("notes", [])),
    )


def _ordinal(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError("an ordinal must be a non-negative integer", path=path)
    return value


def _ordinals(item: dict[str, Any], path: str) -> dict[str, int]:
    """A device's runtime ordinals by platform: ``ordinals``, and the per-vendor field each platform
    row names as where files before ``ordinals`` kept it (``cuda_ordinal``, ``hip_ordinal``); where
    both say, ``ordinals`` wins."""
    out: dict[str, int] = {}
    for platform in platforms.PLATFORMS:  # read now: a row added later counts
        if platform.ordinal_field and item.get(platform.ordinal_field) is not None:
            out[platform.key] = _ordinal(item[platform.ordinal_field], f"{path}.{platform.ordinal_field}")
    raw = item.get("ordinals")
    if raw is not None:
        if not isinstance(raw, dict):
            raise SchemaError("ordinals must be an object (platform -> ordinal)", path=f"{path}.ordinals")
        out.update({str(k): _ordinal(v, f"{path}.ordinals.{k}") for k, v in raw.items()})
    return out


def _peer_access(raw: Any) -> PeerAccess:
    """``peer_access`` of a file (absent: none stated; files written before it keep these facts in
    ``model_params``, which the Topology migrates)."""
    if raw is None:
        return PeerAccess()
    if not isinstance(raw, dict):
        raise SchemaError("peer_access must be an object", path="$.peer_access")
    level = raw.get("max_level")
    if level is not None and not isinstance(level, str):
        raise SchemaError(f"max_level must be a level code such as PHB, got {level!r}", path="$.peer_access.max_level")
    pairs = raw.get("denied_pairs", [])
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in p) for p in pairs):
        raise SchemaError("denied_pairs must be a list of [gpu, gpu] index pairs", path="$.peer_access.denied_pairs")
    return PeerAccess(max_level=level, source=str(raw.get("source", "")), denied_pairs=tuple(tuple(p) for p in pairs))


def _run_choices(raw: Any) -> RunChoices:
    if raw is None:
        return RunChoices()
    if not isinstance(raw, dict):
        raise SchemaError("run_choices must be an object", path="$.run_choices")
    nic = raw.get("nic_devices")
    if nic is not None and not isinstance(nic, str):
        raise SchemaError(f"nic_devices must be a string such as mlx5_0, got {nic!r}", path="$.run_choices.nic_devices")
    return RunChoices(nic_devices=nic)


def dumps(topology: Topology) -> str:
    return json.dumps(to_dict(topology), indent=2, allow_nan=False) + "\n"


def loads(text: str, *, origin: str = "<string>") -> Topology:
    data = loads_strict(text, origin)
    try:
        return from_dict(data)
    except SchemaError as exc:
        raise SchemaError(f"{origin}: {exc}", hint=exc.hint) from exc
    except TopologyError as exc:
        raise TopologyError(f"{origin}: {exc}", hint=exc.hint) from exc


def load(path: str | Path) -> Topology:
    path = Path(path)
    topology = loads(read_text(path, "topology file"), origin=str(path))
    return topology if topology.source else topology.replace(source=f"file:{path}")


def save(topology: Topology, path: str | Path) -> None:
    from ..atomic import write_text_atomic

    write_text_atomic(Path(path), dumps(topology))
