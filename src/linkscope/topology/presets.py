"""Preset topologies shipped as data files (``presets/*.json``), every number cited in the file."""
from __future__ import annotations

from importlib import resources

from ..errors import UserError
from .io import loads
from .model import Topology

DEFAULT_PRESET = "hgx-h200-4"


def preset_names() -> list[str]:
    folder = resources.files("linkscope.topology") / "presets"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def load_preset(name: str) -> Topology:
    names = preset_names()
    if name not in names:
        raise UserError(f"unknown preset {name!r}", hint=f"valid presets: {', '.join(names)}")
    text = (resources.files("linkscope.topology") / "presets" / f"{name}.json").read_text()
    topology = loads(text, origin=f"preset {name}")
    return topology.replace(source=f"preset:{name}", is_this_system=False)
