"""RunRecord JSON: to_dict / from_dict / load / save (atomic), with version checks."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic
from ..errors import SchemaError
from ..userfiles import loads_strict, read_text, refuse_malformed
from ..userschema import validate
from .record_schema import RUN_RECORD
from .schema import RUN_FORMAT, RUN_SCHEMA_VERSION, Measurement, RunProvenance, RunRecord, Status
from .stats import Stats

_BW_KEYS = ("median", "min", "max", "mean", "stddev")


def measurement_to_dict(m: Measurement) -> dict[str, Any]:
    out: dict[str, Any] = {
        "src": m.src,
        "dst": m.dst,
        "method": m.method,
        "pattern": m.pattern,
        "direction": m.direction,
        "size_bytes": m.size_bytes,
        "moved_bytes": m.moved_bytes,
    }
    if m.bandwidth is not None:
        for key in _BW_KEYS:
            out[f"{key}_gb_per_s"] = getattr(m.bandwidth, key)
        out["cv"] = m.bandwidth.cv
        out["n"] = m.bandwidth.n
    else:
        for key in _BW_KEYS:
            out[f"{key}_gb_per_s"] = None
        out["cv"] = None
        out["n"] = m.latency.n if m.latency else 0
    if m.latency is not None:
        out["latency_us"] = m.latency.median
        for key in ("min", "max", "mean", "stddev"):
            out[f"latency_{key}_us"] = getattr(m.latency, key)
        out["latency_n"] = m.latency.n
    else:
        out["latency_us"] = None
    out.update(
        {
            "status": m.status.value,
            "reason": m.reason,
            "provenance": m.provenance.value,
            "scope": m.scope,
            "group": m.group,
            "verified": m.verified,
        }
    )
    if m.extra:
        out["extra"] = dict(m.extra)
    return out


def _endpoint(value: Any, key: str, path: str) -> int | str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SchemaError(f"{key} must be a GPU index, \"host\" or \"*\", got {value!r}", path=f"{path}.{key}")
    return value


def measurement_from_dict(item: Any, path: str) -> Measurement:
    if not isinstance(item, dict):
        raise SchemaError("a measurement must be an object", path=path)
    for key, value in item.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise SchemaError(f"{key} must be a finite number or null, got {value}", path=f"{path}.{key}")
    try:
        bandwidth = None
        if item.get("median_gb_per_s") is not None:
            median = float(item["median_gb_per_s"])
            bandwidth = Stats(
                n=int(item.get("n") or 1),
                median=median,
                min=float(item.get("min_gb_per_s", median)),
                max=float(item.get("max_gb_per_s", median)),
                mean=float(item.get("mean_gb_per_s", median)),
                stddev=float(item.get("stddev_gb_per_s") or 0.0),
            )
        latency = None
        if item.get("latency_us") is not None:
            lat = float(item["latency_us"])
            latency = Stats(
                n=int(item.get("latency_n") or 1),
                median=lat,
                min=float(item.get("latency_min_us", lat)),
                max=float(item.get("latency_max_us", lat)),
                mean=float(item.get("latency_mean_us", lat)),
                stddev=float(item.get("latency_stddev_us") or 0.0),
            )
        return Measurement(
            src=_endpoint(item["src"], "src", path),
            dst=_endpoint(item["dst"], "dst", path),
            method=str(item["method"]),
            pattern=str(item["pattern"]),
            direction=str(item.get("direction", "uni")),
            size_bytes=int(item["size_bytes"]),
            moved_bytes=int(item.get("moved_bytes") or 0),
            bandwidth=bandwidth,
            latency=latency,
            status=Status(item.get("status", "ok")),
            reason=str(item.get("reason", "")),
            provenance=RunProvenance(item.get("provenance", "measured")),
            scope=str(item.get("scope", "transfer")),
            group=item.get("group"),
            verified=item.get("verified"),
            extra=dict(item.get("extra") or {}),
        )
    except KeyError as exc:
        raise SchemaError(f"missing field {exc.args[0]!r}", path=path) from None
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"bad value ({exc})", path=path) from None


def to_dict(record: RunRecord) -> dict[str, Any]:
    return {
        "format": RUN_FORMAT,
        "schema_version": RUN_SCHEMA_VERSION,
        "kind": record.kind,
        "provenance": record.provenance.value,
        "created_utc": record.created_utc,
        "complete": record.complete,
        "context": dict(record.context),
        "options": dict(record.options),
        "topology": dict(record.topology) if record.topology is not None else None,
        "findings": list(record.findings),
        "measurements": [measurement_to_dict(m) for m in record.measurements],
        "extra": dict(record.extra),
    }


@refuse_malformed("run record")
def from_dict(data: Any) -> RunRecord:
    if not isinstance(data, dict):
        raise SchemaError("a run record must be a JSON object", path="$")
    if data.get("format") != RUN_FORMAT:
        fmt = data.get("format")
        kind = {"linkscope.topology": "a topology", "linkscope.watch": "a watch result",
                "linkscope.raw-recording": "a raw discovery manifest"}.get(fmt) if isinstance(fmt, str) else None
        hint = "expected a run record written by bench --json, bench latency --json or survey"
        if kind is not None:
            raise SchemaError(f"this is {kind} file ({fmt!r}), not a linkscope run record", hint=hint)
        raise SchemaError(f"not a linkscope run record (format is {fmt!r}, expected {RUN_FORMAT!r})", hint=hint)
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise SchemaError("missing or bad schema_version", path="$.schema_version")
    if version < 1:
        raise SchemaError(f"unknown run record schema version {version}", path="$.schema_version")
    if version > RUN_SCHEMA_VERSION:
        raise SchemaError(
            f"run record schema version {version} is newer than this linkscope understands ({RUN_SCHEMA_VERSION})",
            hint="upgrade linkscope",
        )
    measurements = data.get("measurements")
    if not isinstance(measurements, list):
        raise SchemaError("measurements must be a list", path="$.measurements")
    validate(data, RUN_RECORD, "run record")  # one schema for the format (record_schema.py)
    _check_embedded_topology(data.get("topology"))
    try:
        provenance = RunProvenance(data.get("provenance", "measured"))
    except ValueError:
        raise SchemaError(f"unknown provenance {data.get('provenance')!r}", path="$.provenance") from None
    return RunRecord(
        kind=str(data.get("kind", "bench")),
        provenance=provenance,
        created_utc=str(data.get("created_utc", "")),
        context=dict(data.get("context") or {}),
        options=dict(data.get("options") or {}),
        topology=data.get("topology"),
        measurements=tuple(measurement_from_dict(m, f"$.measurements[{i}]") for i, m in enumerate(measurements)),
        findings=tuple(str(f) for f in data.get("findings") or ()),
        complete=bool(data.get("complete", True)),
        extra=dict(data.get("extra") or {}),
    )


def _check_embedded_topology(topology: Any) -> None:
    """The topology a record carries is read by ``model check``, ``check``, ``report`` and ``calibrate``
    as a topology: checked here, once, by the topology loader itself (a string or a list there was
    a traceback in each of them)."""
    if topology is None:
        return
    from ..topology import io as topo_io

    try:
        topo_io.from_dict(topology)
    except SchemaError as exc:
        raise SchemaError(f"the topology embedded in the run record ($.topology) is not valid: {exc}",
                          hint=exc.hint) from None


def save(record: RunRecord, path: str | Path) -> None:
    """Atomic: a reader never sees half a file (partial runs are saved with complete=False)."""
    write_json_atomic(Path(path), to_dict(record))


def load(path: str | Path) -> RunRecord:
    path = Path(path)
    data = loads_strict(read_text(path, "results file"), str(path))
    try:
        return from_dict(data)
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc}", hint=exc.hint) from None
