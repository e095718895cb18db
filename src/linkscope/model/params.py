"""Parameters of the fabric model: engine limits, efficiencies, overheads, with provenance.

Every number the model uses beyond the Topology's own link capacities and latencies lives here,
under a flat dotted key, with where it came from (``default``, ``datasheet``, ``measured``,
``calibrated``, ``user``) and a citation. ``Topology.model_params`` stores overrides in the same
keys, either as plain numbers or as ``{"value": x, "provenance": "...", "source": "..."}``;
nested objects (``{"link_efficiency": {"nvlink": 0.8}}``) are flattened to dotted keys.

Keys (rates in GB/s per direction = 1e9 B/s, times in microseconds):

* ``link_efficiency.<kind>`` (nvlink, xgmi, pcie, upi, network): payload fraction of a link's
  per-direction capacity that bulk copies reach. Directed link capacity in the model is
  ``count * link_gb_per_s * link_efficiency.<kind>`` (a shared resource).
* ``method_efficiency.<method>``: per-transfer cap as a fraction of the raw (theoretical) bottleneck
  of the transfer's route: a kernel copy (``sm-push``/``sm-pull``) reaches a fraction of link peak,
  the driver's host-staged peer copy (``ce-nopeer``) a fraction of the PCIe rate. 1.0 = no extra cap.
* ``engine_cap_gb_per_s.<vendor>``: a copy/DMA engine's per-transfer cap (AMD SDMA); absent = no cap.
  Applies to copy-engine methods (ce, ce-read, ce-write, ce-nopeer, h2d, d2h, staged*).
* ``overhead_us.<method>``: per-transfer software overhead (API call, launch, completion).
* ``hop_latency_us``: latency of a hop whose link has no ``latency_us``.
* ``host_memory_bw_gb_per_s``: host memory bandwidth of a CPU/NUMA node without ``memory_bw_gb_per_s``.
* ``host_memcpy_gb_per_s``: rate of the CPU memcpy that pageable copies pay (per transfer).
* ``device_memory_bw_gb_per_s``: GPU memory bandwidth for ``local`` copies (read + write share it).
* ``p2p_transit_efficiency.<kind>`` (pcie_switch, host_bridge, cpu, upi): per-transfer factor for
  a GPU peer copy over PCIe for each device of that kind it passes through (and each socket link it
  crosses): peer traffic through a root complex or across sockets is forwarded worse than through a
  switch.
* ``remote_read_base_us``, ``flag_base_us``: fixed parts of the pointer-chase and flag ping-pong latencies.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..errors import ConfigError
from ..patterns.methods import method_keys

METHODS = method_keys()  # the one method table (patterns/methods.py)
LINK_KINDS = ("nvlink", "xgmi", "pcie", "upi", "network")
TRANSIT_KINDS = ("pcie_switch", "host_bridge", "cpu", "upi")

_H200 = "nvbandwidth on 4 x H200 (NV18, 478 GB/s theoretical per direction), 2026-11-22, issue 4"
_ASSUME = "assumption, typical order of magnitude; calibrate with linkscope model calibrate"
_SDMA = ("AMD SDMA copy engine per-transfer limit of about 50 GB/s as documented for MI200 (issue 4); "
         "DMA engines used for all copy directions unless HSA_ENABLE_SDMA=0 (ROCR-Runtime environment "
         "variables, rocm.docs.amd.com); 50 GB/s = one 16-wide 25 GT/s Infinity Fabric link "
         "(ROCm MI250 microarchitecture)")

# key -> (value, provenance, source)
_DEFAULTS: dict[str, tuple[float, str, str]] = {
    "link_efficiency.nvlink": (0.826, "measured", f"CE one-way 395 of 478 GB/s: {_H200}"),
    "link_efficiency.xgmi": (0.80, "default", _ASSUME),
    "link_efficiency.pcie": (0.881, "measured", f"H2D/D2H 55.5 of 63.0 GB/s (PCIe Gen5 x16): {_H200}"),
    "link_efficiency.upi": (0.70, "default", _ASSUME),
    "link_efficiency.network": (0.93, "default", _ASSUME),
    "method_efficiency.sm-push": (0.774, "measured", f"SM copy 370 of 478 GB/s: {_H200}"),
    "method_efficiency.sm-pull": (0.787, "measured", f"SM copy 376 of 478 GB/s: {_H200}"),
    "method_efficiency.ce-nopeer": (0.611, "measured", f"P2P disabled one-way ~38.5 of 63 GB/s PCIe: {_H200}"),
    "engine_cap_gb_per_s.amd": (50.0, "datasheet", _SDMA),
    "overhead_us.ce": (6.0, "default", _ASSUME),
    "overhead_us.ce-read": (6.0, "default", _ASSUME),
    "overhead_us.ce-write": (6.0, "default", _ASSUME),
    "overhead_us.ce-nopeer": (10.0, "default", _ASSUME),
    "overhead_us.ce-blit": (6.0, "default", _ASSUME),
    "overhead_us.sm-push": (5.0, "default", _ASSUME),
    "overhead_us.sm-pull": (5.0, "default", _ASSUME),
    "overhead_us.staged": (12.0, "default", _ASSUME),
    "overhead_us.staged-pinned": (10.0, "default", _ASSUME),
    "overhead_us.h2d": (6.0, "default", _ASSUME),
    "overhead_us.d2h": (6.0, "default", _ASSUME),
    "overhead_us.h2d-pageable": (10.0, "default", _ASSUME),
    "overhead_us.d2h-pageable": (10.0, "default", _ASSUME),
    "overhead_us.local": (4.0, "default", _ASSUME),
    "hop_latency_us": (0.3, "default", _ASSUME),
    "host_memory_bw_gb_per_s": (150.0, "default", _ASSUME),
    "host_memcpy_gb_per_s": (20.0, "default", _ASSUME),
    "device_memory_bw_gb_per_s": (3000.0, "default", _ASSUME),
    "p2p_transit_efficiency.pcie_switch": (0.97, "default", _ASSUME),
    "p2p_transit_efficiency.host_bridge": (0.80, "default", _ASSUME),
    "p2p_transit_efficiency.cpu": (0.80, "default", _ASSUME),
    "p2p_transit_efficiency.upi": (0.50, "default", _ASSUME),
    "remote_read_base_us": (0.0, "measured", "2 x H200 NV18, 2026-11-22: the 0.85 us remote-read round trip is all link "
                            "latency (4 x 0.2125 us GPU-NVSwitch hops); docs/runs/survey-512MiB-h200x2-2026-11-22.json"),
    "flag_base_us": (0.17, "measured", "2 x H200 NV18, 2026-11-22: one-way flag 0.60 us minus the 0.425 us route "
                     "(docs/runs/survey-512MiB-h200x2-2026-11-22.json)"),
}

# keys that may appear without a default (vendors other than amd have no engine cap by default)
_OPEN_PREFIXES = ("engine_cap_gb_per_s.", "method_efficiency.", "overhead_us.", "link_efficiency.")
# non-numeric keys of Topology.model_params that belong to the model but are not parameters
STRUCTURAL_KEYS = ("no_peer_access", "p2p_max_level")


def default_keys() -> tuple[str, ...]:
    return tuple(_DEFAULTS)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping) and "value" not in value:
            out.update(_flatten(value, f"{full}."))
        else:
            out[full] = value
    return out


def _valid_key(key: str) -> bool:
    return key in _DEFAULTS or any(key.startswith(p) and len(key) > len(p) for p in _OPEN_PREFIXES)


@dataclass(frozen=True)
class ModelParams:
    """Model parameters with provenance (STYLE.md C4).

    Attributes:
        values: parameter key -> number (units in the key's name or in the module docstring).
        provenance: key -> default | datasheet | measured | calibrated | user.
        sources: key -> citation or fitting note.
        ignored: keys of the input that are not model parameters (kept to warn about).
    """

    values: Mapping[str, float]
    provenance: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def defaults(cls) -> "ModelParams":
        return cls(
            values={k: v[0] for k, v in _DEFAULTS.items()},
            provenance={k: v[1] for k, v in _DEFAULTS.items()},
            sources={k: v[2] for k, v in _DEFAULTS.items()},
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, *, provenance: str = "user",
                     base: "ModelParams | None" = None) -> "ModelParams":
        """Defaults (or ``base``) overridden by ``data`` (a Topology.model_params-style mapping).

        Raises ConfigError for a parameter whose value is not a positive number (zero allowed for
        overheads and latencies).
        """
        params = base or cls.defaults()
        if not data:
            return params
        values, prov, sources = dict(params.values), dict(params.provenance), dict(params.sources)
        ignored = list(params.ignored)
        for key, raw in _flatten(data).items():
            if key in STRUCTURAL_KEYS:
                continue
            if not _valid_key(key):
                ignored.append(key)
                continue
            item_prov, item_source = provenance, ""
            if isinstance(raw, Mapping):
                item_prov = str(raw.get("provenance", provenance))
                item_source = str(raw.get("source", ""))
                raw = raw.get("value")
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                raise ConfigError(f"model parameter {key!r} must be a number, got {raw!r}")
            value = float(raw)
            nonneg = key.startswith("overhead_us.") or key.endswith("_us")
            if value < 0 or (value == 0 and not nonneg) or value != value:
                raise ConfigError(f"model parameter {key!r} must be {'>= 0' if nonneg else '> 0'}, got {raw!r}")
            values[key] = value
            prov[key] = item_prov
            sources[key] = item_source
        return cls(values=values, provenance=prov, sources=sources, ignored=tuple(ignored))

    @classmethod
    def for_topology(cls, topology: Any, overrides: "ModelParams | Mapping[str, Any] | None" = None) -> "ModelParams":
        """Defaults, then the topology's ``model_params``, then ``overrides``."""
        params = cls.from_mapping(getattr(topology, "model_params", None) or {}, provenance="user")
        if overrides is None:
            return params
        if isinstance(overrides, ModelParams):
            return cls(
                values={**params.values, **overrides.values},
                provenance={**params.provenance, **overrides.provenance},
                sources={**params.sources, **overrides.sources},
                ignored=params.ignored + overrides.ignored,
            )
        return cls.from_mapping(overrides, provenance="user", base=params)

    def with_values(self, updates: Mapping[str, float], *, provenance: str, sources: Mapping[str, str] | None = None) -> "ModelParams":
        values, prov, src = dict(self.values), dict(self.provenance), dict(self.sources)
        for key, value in updates.items():
            values[key] = float(value)
            prov[key] = provenance
            src[key] = (sources or {}).get(key, "")
        return ModelParams(values=values, provenance=prov, sources=src, ignored=self.ignored)

    # ---- lookups -----------------------------------------------------------------------------
    def get(self, key: str, default: float | None = None) -> float | None:
        return self.values.get(key, default)

    def link_efficiency(self, kind: str) -> float:
        return float(self.values.get(f"link_efficiency.{kind}", 1.0))

    def method_efficiency(self, method: str) -> float:
        return float(self.values.get(f"method_efficiency.{method}", 1.0))

    def overhead_us(self, method: str) -> float:
        return float(self.values.get(f"overhead_us.{method}", 0.0))

    def engine_cap_gb_per_s(self, vendor: str | None) -> float:
        if not vendor:
            return float("inf")
        return float(self.values.get(f"engine_cap_gb_per_s.{vendor.lower()}", float("inf")))

    def transit_efficiency(self, kind: str) -> float:
        return float(self.values.get(f"p2p_transit_efficiency.{kind}", 1.0))

    def __getitem__(self, key: str) -> float:
        try:
            return float(self.values[key])
        except KeyError:
            raise ConfigError(f"unknown model parameter {key!r}", hint=f"valid: {', '.join(sorted(self.values))}") from None

    # ---- output ---------------------------------------------------------------------------------
    def to_model_params(self, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """JSON form for Topology.model_params: ``{key: {"value", "provenance", "source"}}``."""
        chosen = sorted(self.values) if keys is None else list(keys)
        return {
            k: {"value": self.values[k], "provenance": self.provenance.get(k, "user"), "source": self.sources.get(k, "")}
            for k in chosen
            if k in self.values
        }
