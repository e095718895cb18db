"""Link error counters and link state, sampled before and after a step (a survey step or a watched
command), and the links they name: a link whose error counters grew, that went down, or that runs
below its width (or, right after traffic, below its generation).

A snapshot is JSON-able: ``{"gpus": {"<index>": <link health>}}`` where a GPU's link health is what
the counter source's ``link_health(index)`` returns (NVIDIA: ``discovery.nvml.read_link_health``;
AMD: ``discovery.amdsmi.read_link_health``): ``nvlink.links`` (``link``, ``active``, ``errors``: counter
name -> count or None), ``nvlink.active_count``, ``pcie`` (``gen``, ``width``, ``max_gen``,
``max_width``, ``counters``). A counter the driver refuses is None and is never compared; the same
snapshot comes back from a recording (``nvml.json`` ``gpus[*].link_health``), so CI judges real ones.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ERRORS_GREW = "errors-grew"
CORRECTED_GREW = "corrected-grew"
LINK_DOWN = "link-down"
BELOW_WIDTH = "below-width"
BELOW_SPEED = "below-speed"
FEWER_LINKS = "fewer-links"

#: counter names as people read them (nvidia-smi nvlink -e says "Replay Errors", "Recovery Errors",
#: "CRC Errors" for these).
COUNTER_TEXT = {"replay": "replay", "recovery": "recovery", "crc_flit": "CRC (flit)", "crc_data": "CRC (data)",
                "ecc_data": "ECC (data)",
                "replay_rollover": "replay rollover", "l0_to_recovery": "L0-to-recovery", "correctable": "correctable",
                "naks_received": "NAKs received", "receiver_error": "receiver error", "bad_tlp": "bad TLP",
                "naks_sent": "NAKs sent", "bad_dllp": "bad DLLP", "non_fatal": "non-fatal", "fatal": "fatal",
                "lcrc": "LCRC", "xgmi_error": "xGMI error status"}


#: counters of errors the link corrects by itself (ECC/FEC on NVLink4, PCIe replays and NAKs, link
#: recovery to L0): their growth is named, but marks a link as suspect only together with a slow
#: pair. Evidence: on the recorded healthy 2 x H100 (2026-11-25) NVLink CRC-data and ECC-data counts
#: were 203-363 per GPU with replays and recoveries at 0, and PCIe L0-to-recovery 201-230 with
#: replays 0-2; which counts are harmless at which rate is not documented by NVIDIA's NVML reference
#: (a belief, to be tightened with DCGM's health thresholds).
CORRECTED = frozenset({"ecc_data", "crc_data", "replay_rollover", "l0_to_recovery", "correctable", "naks_received",
                       "receiver_error", "bad_tlp", "naks_sent", "bad_dllp", "lcrc"})
#: PCIe's replay counter is a correction too (a TLP sent again), but it is the counter nvidia-smi
#: reports as the PCIe link's health, so it counts as an error on PCIe; on NVLink, replays count too.


@dataclass(frozen=True)
class LinkIssue:
    """One link that misbehaved.

    Attributes:
        gpu: the GPU index the snapshot used (NVML's or amdsmi's).
        element: what to look at, e.g. ``GPU1 NVLink 3`` or ``GPU0 PCIe link``.
        kind: errors-grew | corrected-grew (only counters in ``CORRECTED``) | link-down | below-width
            | below-speed | fewer-links.
        step: the step that exposed it ("" for the state found at the start).
        detail: the evidence (counts before and after, widths).
        link: the NVLink/xGMI index, None for the PCIe link.
    """

    gpu: int
    element: str
    kind: str
    step: str
    detail: str
    link: int | None = None

    @property
    def sentence(self) -> str:
        when = f" during '{self.step}'" if self.step else ""
        what = {ERRORS_GREW: "error counters grew", CORRECTED_GREW: "corrected-error counters grew",
                LINK_DOWN: "went down", BELOW_WIDTH: "runs below its width",
                BELOW_SPEED: "runs below its generation", FEWER_LINKS: "has fewer active links than its peers"}[self.kind]
        return f"{self.element} {what}{when}: {self.detail}."

    def as_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "element": self.element, "kind": self.kind, "step": self.step, "detail": self.detail,
                "link": self.link, "sentence": self.sentence}


def take(source: Any, gpus: Sequence[int]) -> dict[str, Any]:
    """A snapshot of every GPU's link health through ``source.link_health`` (a CounterSource that has
    it); a GPU whose read fails carries ``error`` instead. Sources without ``link_health`` give
    ``{"gpus": {}, "unsupported": reason}``."""
    fn = getattr(source, "link_health", None)
    if fn is None:
        return {"gpus": {}, "unsupported": f"{type(source).__name__} reads no link error counters"}
    out: dict[str, Any] = {}
    for g in gpus:
        try:
            out[str(g)] = fn(g)
        except Exception as exc:  # a GPU that stops answering must not stop the survey or the watch
            out[str(g)] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"gpus": out}


def _name(gpu: int, names: Mapping[int, str] | None) -> str:
    return (names or {}).get(gpu, f"GPU{gpu}")


def _grew(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    out = []
    for key, new in after.items():
        old = before.get(key)
        if isinstance(new, int) and isinstance(old, int) and new > old:
            out.append(f"{COUNTER_TEXT.get(key, key)} +{new - old} ({old} -> {new})")
    return out


def _kind(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    """errors-grew when a counter outside ``CORRECTED`` grew, else corrected-grew."""
    names = {k for k, v in (after or {}).items()
             if isinstance(v, int) and isinstance((before or {}).get(k), int) and v > (before or {})[k]}
    return CORRECTED_GREW if names and names <= CORRECTED else ERRORS_GREW


def _fabric(health: Mapping[str, Any]) -> str:
    return "xGMI" if health.get("fabric") == "xgmi" else "NVLink"


def state_issues(snapshot: Mapping[str, Any], step: str = "", *, loaded: bool = False,
                 names: Mapping[int, str] | None = None) -> list[LinkIssue]:
    """Links of one snapshot that run below their width (always), below their generation (only when
    ``loaded``: idle GPUs lower the PCIe generation to save power), or GPUs with fewer active
    NVLinks/xGMI links than another GPU with as many links in all (the same model: an asymmetric
    fabric such as MI250X's, where GCDs have 6 or 7 xGMI links, is not a fault)."""
    out: list[LinkIssue] = []
    gpus = {int(k): v for k, v in (snapshot.get("gpus") or {}).items() if isinstance(v, dict) and "error" not in v}
    most: dict[int, int] = {}  # per link count (GPUs of one model): the most links active on any of them
    for h in gpus.values():
        nv = h.get("nvlink") or {}
        count = nv.get("link_count") or 0
        most[count] = max(most.get(count, 0), nv.get("active_count") or 0)
    for g, health in sorted(gpus.items()):
        who = _name(g, names)
        pcie = health.get("pcie") or {}
        width, max_width = pcie.get("width"), pcie.get("max_width")
        if width and max_width and width < max_width:
            out.append(LinkIssue(g, f"{who} PCIe link", BELOW_WIDTH, step, f"x{width} of x{max_width}"))
        gen, max_gen = pcie.get("gen"), pcie.get("max_gen")
        if loaded and gen and max_gen and gen < max_gen:
            out.append(LinkIssue(g, f"{who} PCIe link", BELOW_SPEED, step, f"Gen{gen} of Gen{max_gen} right after traffic"))
        nv = health.get("nvlink") or {}
        active = nv.get("active_count") or 0
        peers_best = most.get(nv.get("link_count") or 0, 0)
        if active < peers_best:
            down = [e["link"] for e in nv.get("links", []) if not e.get("active")]
            where = f"; inactive: {', '.join(str(k) for k in down)}" if down else ""
            out.append(LinkIssue(g, f"{who} {_fabric(health)}", FEWER_LINKS, step,
                                 f"{active} active links, others have {peers_best}{where}"))
    return out


def changes(before: Mapping[str, Any], after: Mapping[str, Any], step: str, *,
            names: Mapping[int, str] | None = None) -> list[LinkIssue]:
    """Links whose error counters grew, or that were active and are not, between two snapshots."""
    out: list[LinkIssue] = []
    old_gpus = before.get("gpus") or {}
    for key, new in sorted((after.get("gpus") or {}).items(), key=lambda kv: int(kv[0])):
        old = old_gpus.get(key)
        if not isinstance(new, dict) or not isinstance(old, dict) or "error" in new or "error" in old:
            continue
        g = int(key)
        who = _name(g, names)
        fabric = _fabric(new)
        old_links = {e["link"]: e for e in (old.get("nvlink") or {}).get("links", [])}
        for entry in (new.get("nvlink") or {}).get("links", []):
            prev = old_links.get(entry["link"])
            if prev is None:
                continue
            if prev.get("active") and not entry.get("active"):
                out.append(LinkIssue(g, f"{who} {fabric} {entry['link']}", LINK_DOWN, step, "active before, inactive after",
                                     entry["link"]))
                continue
            grew = _grew(prev.get("errors") or {}, entry.get("errors") or {})
            if grew:
                out.append(LinkIssue(g, f"{who} {fabric} {entry['link']}", _kind(prev.get("errors"), entry.get("errors")),
                                     step, ", ".join(grew), entry["link"]))
        before_counters = (old.get("pcie") or {}).get("counters") or {}
        after_counters = (new.get("pcie") or {}).get("counters") or {}
        grew = _grew(before_counters, after_counters)
        if grew:
            out.append(LinkIssue(g, f"{who} PCIe link", _kind(before_counters, after_counters), step, ", ".join(grew)))
    return out


def issue_from_dict(data: Mapping[str, Any]) -> LinkIssue | None:
    """A LinkIssue from its ``as_dict`` form (a RunRecord's ``extra["link_errors"]["issues"]``); None when malformed."""
    try:
        link = data.get("link")
        return LinkIssue(int(data["gpu"]), str(data["element"]), str(data["kind"]), str(data.get("step") or ""),
                         str(data.get("detail") or ""), int(link) if isinstance(link, int) else None)
    except (KeyError, TypeError, ValueError):
        return None


_GREW = re.compile(r"([A-Za-z][^,;+]*?) \+(\d+)")


def _gpu_span(gpus: Sequence[int]) -> str:
    if len(gpus) > 2 and list(gpus) == list(range(gpus[0], gpus[-1] + 1)):
        return f"GPU{gpus[0]}–GPU{gpus[-1]}"
    return ", ".join(f"GPU{g}" for g in gpus)


def corrected_lines(issues: Sequence[LinkIssue]) -> list[str]:
    """Corrected-error growth as one line per fabric for the whole run, however many GPUs, links and
    steps it covers: how many links of how many GPUs, and the counters' growth added up (a healthy
    node under load adds a few corrected CRC/ECC data errors on most links in every step: one line
    per GPU listed 18 NVLink numbers four times on a 4 x H200 survey, 2026-11-28)."""
    by_fabric: dict[str, list[LinkIssue]] = {}
    for issue in issues:
        if issue.kind == CORRECTED_GREW and issue.link is not None:
            by_fabric.setdefault(issue.element.split()[-2], []).append(issue)
    lines = []
    for fabric, group in by_fabric.items():
        links = {(i.gpu, int(i.link)) for i in group if i.link is not None}
        gpus = sorted({g for g, _ in links})
        per_gpu = {g: sorted(k for h, k in links if h == g) for g in gpus}
        counts: dict[str, int] = {}
        for issue in group:
            for name, grew in _GREW.findall(issue.detail):
                counts[name.strip()] = counts.get(name.strip(), 0) + int(grew)
        same = len({tuple(v) for v in per_gpu.values()}) == 1
        where = (f"on {len(per_gpu[gpus[0]])} link{'s' if len(per_gpu[gpus[0]]) != 1 else ''} of each of "
                 f"{len(gpus)} GPUs ({_gpu_span(gpus)})" if same and len(gpus) > 1 else
                 f"on {len(links)} link{'s' if len(links) != 1 else ''} of {_gpu_span(gpus)}")
        steps = len(dict.fromkeys(i.step for i in group))
        grew_text = ", ".join(f"{name} +{n}" for name, n in counts.items())
        lines.append(f"{fabric} corrected-error counters grew {where} during {steps} step{'s' if steps != 1 else ''}"
                     f"{f' ({grew_text} in all)' if grew_text else ''}: corrected by the link, worth a look only if "
                     "these links' pairs are slow or the counts keep climbing (each link in extra['link_errors']).")
    return lines


def summary(snapshot: Mapping[str, Any], names: Mapping[int, str] | None = None) -> list[str]:
    """One line per GPU: active links, error totals, PCIe state and what could not be read."""
    lines = []
    if snapshot.get("unsupported"):
        return [f"link error counters: {snapshot['unsupported']}"]
    for key, health in sorted((snapshot.get("gpus") or {}).items(), key=lambda kv: int(kv[0])):
        who = _name(int(key), names)
        if "error" in health:
            lines.append(f"{who}: could not read link health ({health['error']})")
            continue
        parts = []
        nv = health.get("nvlink") or {}
        if nv.get("link_count"):
            sums: dict[str, int] = {}
            unknown: set[str] = set()
            for e in nv.get("links", []):
                for name, v in (e.get("errors") or {}).items():
                    if isinstance(v, int):
                        sums[name] = sums.get(name, 0) + v
                    else:
                        unknown.add(name)
            errs = ", ".join(f"{COUNTER_TEXT.get(n, n)} {v}" for n, v in sums.items()) or "no counter readable"
            if unknown - set(sums):
                errs += f" ({', '.join(sorted(unknown - set(sums)))} not supported)"
            parts.append(f"{_fabric(health)} {nv.get('active_count', 0)}/{nv['link_count']} links active, errors: {errs}")
        pcie = health.get("pcie") or {}
        if pcie.get("gen"):
            state = f"PCIe Gen{pcie['gen']} x{pcie.get('width')}"
            if pcie.get("max_gen"):
                state += f" (max Gen{pcie['max_gen']} x{pcie.get('max_width')})"
            counters = pcie.get("counters") or {}
            known = {n: v for n, v in counters.items() if isinstance(v, int)}
            if known:
                state += ", " + ", ".join(f"{COUNTER_TEXT.get(n, n)} {v}" for n, v in known.items())
            parts.append(state)
        lines.append(f"{who}: " + ("; ".join(parts) if parts else "no link state readable"))
    return lines
