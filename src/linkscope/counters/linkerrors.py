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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import platforms
from ..platforms import LinkFabric

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


def take(source: Any, gpus: Sequence[int], *, clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """A snapshot of every GPU's link health through ``source.link_health`` (a CounterSource that has
    it); a GPU whose read fails carries ``error`` instead. Sources without ``link_health`` give
    ``{"gpus": {}, "unsupported": reason}``. ``taken_unix_s`` (the clock when the read ended) lets
    two snapshots give rates (``judge_growth``)."""
    fn = getattr(source, "link_health", None)
    if fn is None:
        return {"gpus": {}, "unsupported": f"{type(source).__name__} reads no link error counters"}
    out: dict[str, Any] = {}
    for g in gpus:
        try:
            out[str(g)] = fn(g)
        except Exception as exc:  # a GPU that stops answering must not stop the survey or the watch
            out[str(g)] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"gpus": out, "taken_unix_s": clock()}


def _name(gpu: int, names: Mapping[int, str] | None) -> str:
    return (names or {}).get(gpu, f"GPU{gpu}")


def _deltas(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, int]:
    """Counter name -> growth, for the counters readable in both readings that grew."""
    out = {}
    for key, new in after.items():
        old = before.get(key)
        if isinstance(new, int) and isinstance(old, int) and new > old:
            out[key] = new - old
    return out


def _grew(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return [f"{COUNTER_TEXT.get(key, key)} +{d} ({before[key]} -> {after[key]})" for key, d in _deltas(before, after).items()]


def _kind(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    """errors-grew when a counter outside ``CORRECTED`` grew, else corrected-grew."""
    names = set(_deltas(before or {}, after or {}))
    return CORRECTED_GREW if names and names <= CORRECTED else ERRORS_GREW


def _fabric(health: Mapping[str, Any]) -> LinkFabric:
    """The fabric a GPU's link-health snapshot describes (its platform row's; NVML's names none)."""
    return platforms.link_fabric(health.get("fabric"))


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
            out.append(LinkIssue(g, f"{who} {_fabric(health).label}", FEWER_LINKS, step,
                                 f"{active} active links, others have {peers_best}{where}"))
    return out


def all_links_active(snapshot: Mapping[str, Any]) -> dict[int, int]:
    """GPU -> its link count, for the GPUs of a snapshot whose every NVLink/xGMI link is listed and active
    (a GPU with no such link, or one that could not be read, is left out)."""
    out: dict[int, int] = {}
    for key, health in (snapshot.get("gpus") or {}).items():
        links = ((health or {}).get("nvlink") or {}).get("links") if isinstance(health, dict) else None
        if str(key).isdigit() and links and all(isinstance(e, dict) and e.get("active") is True for e in links):
            out[int(key)] = len(links)
    return out


def _gpu_pairs(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(GPU index, its health before, after) for every GPU read cleanly in both snapshots, in index order."""
    old_gpus = before.get("gpus") or {}
    out = []
    for key, new in sorted((after.get("gpus") or {}).items(), key=lambda kv: int(kv[0])):
        old = old_gpus.get(key)
        if isinstance(new, dict) and isinstance(old, dict) and "error" not in new and "error" not in old:
            out.append((int(key), old, new))
    return out


def changes(before: Mapping[str, Any], after: Mapping[str, Any], step: str, *,
            names: Mapping[int, str] | None = None) -> list[LinkIssue]:
    """Links whose error counters grew, or that were active and are not, between two snapshots."""
    out: list[LinkIssue] = []
    for g, old, new in _gpu_pairs(before, after):
        who = _name(g, names)
        fabric = _fabric(new).label
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
            parts.append(f"{_fabric(health).label} {nv.get('active_count', 0)}/{nv['link_count']} links active, errors: {errs}")
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


# ---- verdicts on error growth (rates, thresholds with their source) --------------------------------

#: DCGM's health watch (NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp, ``MonitorNVLink``): an NVLink
#: replay or recovery error counter that grew by >= 1 (``DCGM_LIMIT_MAX_NVLINK_ERROR``) over the
#: watched window FAILS the GPU; CRC flit/data growth warns, and fails at >= 100 per second
#: (``DCGM_LIMIT_MAX_NVLINK_CRC_ERROR`` 100.0 in DcgmGpuHardwareLimits.h: "RM has informed us that CRC
#: errors only matter at rates of 100+ per second"). ``MonitorPcie`` warns when the PCIe replay
#: counter grows by more than 8 over its window (``DCGM_LIMIT_MAX_PCIREPLAY_RATE``: "8 replays per
#: minute is the maximum recommended by RM").
DCGM_NVLINK_FATAL = frozenset({"replay", "recovery"})
DCGM_NVLINK_CRC = frozenset({"crc_flit", "crc_data"})
DCGM_NVLINK_CRC_FAIL_PER_S = 100.0
DCGM_PCIE_REPLAY_WARN_PER_MIN = 8.0
DCGM_SOURCE = "DCGM health watch (NVIDIA/DCGM DcgmHealthWatch.cpp MonitorNVLink/MonitorPcie, DcgmGpuHardwareLimits.h)"
#: NVLink's ECC (data) counter is not among DCGM's health fields; it counts data errors the link
#: corrected (NVML ``NVML_NVLINK_ERROR_DL_ECC_DATA``). Judged with the CRC rate limit: a belief, said so.
ECC_AS_CRC_NOTE = "ECC (data) is not among DCGM's health fields; judged with its CRC rate limit (a belief)"

OK = "ok"
WARN = "warn"
FAIL = "fail"
NOT_JUDGED = "not-judged"


@dataclass(frozen=True)
class GrowthVerdict:
    """The verdict on one GPU's link error growth between two snapshots.

    Attributes:
        gpu: the snapshot's GPU index.
        element: e.g. ``GPU0 NVLink`` or ``GPU0 PCIe link``.
        level: ok | warn | fail | not-judged.
        deltas: counter name -> growth over the window (summed over links for NVLink).
        links: per link that grew: (link, peer bus id or None, {counter: growth}).
        window_s: seconds between the snapshots (None when a snapshot has no time).
        per_s: the judged counters' growth per second (None without a window).
        reason: the sentence, with the threshold and its source.
    """

    gpu: int
    element: str
    level: str
    deltas: dict[str, int]
    links: tuple[tuple[int, str | None, dict[str, int]], ...]
    window_s: float | None
    per_s: float | None
    reason: str

    @property
    def sentence(self) -> str:
        return f"{self.element}: {self.level}: {self.reason}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GrowthVerdict:
        return cls(int(data["gpu"]), str(data["element"]), str(data["level"]), dict(data["deltas"]),
                   tuple((int(x["link"]), x.get("peer_pci_bus_id"), dict(x["deltas"])) for x in data.get("links", [])),
                   data.get("window_s"), data.get("per_s"), str(data["reason"]))

    def as_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "element": self.element, "level": self.level, "deltas": self.deltas,
                "links": [{"link": link, "peer_pci_bus_id": peer, "deltas": d} for link, peer, d in self.links],
                "window_s": self.window_s, "per_s": self.per_s, "reason": self.reason, "sentence": self.sentence}


def _rate_text(count: int, window_s: float | None, moved_bytes: float | None) -> str:
    parts = []
    if window_s:
        parts.append(f"{count / window_s:.3g}/s")
        parts.append(f"{count / window_s * 3600:.3g}/hour")
    if moved_bytes:
        parts.append(f"{count / (moved_bytes / 1e12):.3g} per TB moved")
    return ", ".join(parts)


def judge_growth(before: Mapping[str, Any], after: Mapping[str, Any], step: str = "", *,
                 moved_bytes: Mapping[int, float] | None = None,
                 names: Mapping[int, str] | None = None) -> list[GrowthVerdict]:
    """Per GPU, the growth of its NVLink/xGMI and PCIe error counters between two snapshots, judged
    as rates against DCGM's health-watch limits (see ``DCGM_SOURCE``). GPUs whose counters did not
    grow give no verdict. ``moved_bytes``: bytes the GPU's links moved in the window (per TB rates).

    Counters with no documented limit (PCIe NAKs, L0-to-recovery, ...) are listed as not judged.
    """
    t0, t1 = before.get("taken_unix_s"), after.get("taken_unix_s")
    window_s = float(t1 - t0) if isinstance(t0, (int, float)) and isinstance(t1, (int, float)) and t1 > t0 else None
    when = f" during '{step}'" if step else ""
    out: list[GrowthVerdict] = []
    for g, old, new in _gpu_pairs(before, after):
        who = _name(g, names)
        moved = (moved_bytes or {}).get(g)
        old_links = {e.get("link"): e for e in (old.get("nvlink") or {}).get("links", []) if isinstance(e, dict)}
        per_link = []
        sums: dict[str, int] = {}
        for entry in (new.get("nvlink") or {}).get("links", []):
            prev = old_links.get(entry.get("link"))
            if not isinstance(entry, dict) or prev is None:
                continue
            d = _deltas(prev.get("errors") or {}, entry.get("errors") or {})
            if d:
                per_link.append((int(entry["link"]), entry.get("remote_pci_bus_id"), d))
                for name, v in d.items():
                    sums[name] = sums.get(name, 0) + v
        if sums:
            link_fabric = _fabric(new)
            fabric = link_fabric.label
            element = f"{who} {fabric}"
            where = "; ".join(f"link {link}{f' (peer {peer})' if peer else ''}: "
                              + ", ".join(f"{COUNTER_TEXT.get(n, n)} +{v}" for n, v in d.items())
                              for link, peer, d in per_link[:4]) + ("; ..." if len(per_link) > 4 else "")
            fatal = {n: v for n, v in sums.items() if n in DCGM_NVLINK_FATAL}
            corrected = sum(v for n, v in sums.items() if n in DCGM_NVLINK_CRC or n == "ecc_data")
            others = {n: v for n, v in sums.items() if n not in DCGM_NVLINK_FATAL and n not in DCGM_NVLINK_CRC
                      and n != "ecc_data"}
            per_s = corrected / window_s if window_s and corrected else None
            if not link_fabric.documented_error_limits:
                level, reason = NOT_JUDGED, (f"error counters grew{when} ({where}); no documented limit for "
                                             f"{fabric} error counters")
            elif fatal:
                level = FAIL
                reason = (f"{', '.join(f'{COUNTER_TEXT[n]} +{v}' for n, v in fatal.items())}{when} ({where}): DCGM "
                          f"fails a GPU on any NVLink replay or recovery error [{DCGM_SOURCE}]")
            elif corrected and window_s is None:
                level = NOT_JUDGED
                reason = f"{corrected} corrected errors{when} ({where}); no time between the readings, so no rate"
            elif corrected and per_s is not None and per_s >= DCGM_NVLINK_CRC_FAIL_PER_S:
                level = FAIL
                reason = (f"{corrected} CRC/ECC errors{when} ({_rate_text(corrected, window_s, moved)}; {where}): at or "
                          f"above DCGM's failure rate of {DCGM_NVLINK_CRC_FAIL_PER_S:g}/s per GPU [{DCGM_SOURCE}]")
            elif corrected:
                level = OK
                reason = (f"{corrected} corrected CRC/ECC errors{when} ({_rate_text(corrected, window_s, moved)}; "
                          f"{where}): normal, below DCGM's failure rate of {DCGM_NVLINK_CRC_FAIL_PER_S:g}/s per GPU "
                          f"(DCGM lists any growth as a warning) [{DCGM_SOURCE}]"
                          + (f"; {ECC_AS_CRC_NOTE}" if "ecc_data" in sums else ""))
            else:
                level = NOT_JUDGED
                reason = f"{', '.join(f'{COUNTER_TEXT.get(n, n)} +{v}' for n, v in others.items())}{when}: no documented limit"
            out.append(GrowthVerdict(g, element, level, sums, tuple(per_link), window_s, per_s, reason))
        d = _deltas((old.get("pcie") or {}).get("counters") or {}, (new.get("pcie") or {}).get("counters") or {})
        if d:
            element = f"{who} PCIe link"
            listed = ", ".join(f"{COUNTER_TEXT.get(n, n)} +{v}" for n, v in d.items())
            replay = d.get("replay", 0)
            per_min = replay / window_s * 60 if window_s and replay else None
            if replay and window_s is None:
                level, reason = NOT_JUDGED, f"{listed}{when}; no time between the readings, so no rate"
            elif per_min is not None and per_min > DCGM_PCIE_REPLAY_WARN_PER_MIN:
                level, reason = WARN, (f"{listed}{when}: {per_min:.3g} replays/minute, above the "
                                       f"{DCGM_PCIE_REPLAY_WARN_PER_MIN:g}/minute DCGM warns at [{DCGM_SOURCE}]")
            elif replay:
                level, reason = OK, (f"{listed}{when}: {per_min:.3g} replays/minute, below the "
                                     f"{DCGM_PCIE_REPLAY_WARN_PER_MIN:g}/minute DCGM warns at [{DCGM_SOURCE}]")
            else:
                level, reason = NOT_JUDGED, f"{listed}{when}: no documented limit for these PCIe counters"
            out.append(GrowthVerdict(g, element, level, d, (), window_s,
                                     None if per_min is None else per_min / 60, reason))
    return out


#: issue kinds that ``judge_growth`` judges as rates over the whole run (one line per GPU and level).
GROWTH_ISSUE_KINDS = frozenset({CORRECTED_GREW, ERRORS_GREW})


def judged_lines(judged: Sequence[GrowthVerdict]) -> list[str]:
    """Verdicts on error growth as findings: every ``ok`` one in a single line (a healthy NVLink 4
    node adds a few corrected errors on most links of every GPU), the others one line each."""
    lines = [f"Link errors: {j.sentence}." for j in judged if j.level != OK]
    fine = [j for j in judged if j.level == OK]
    if fine:
        rates = [j.per_s for j in fine if j.per_s is not None]
        span = (f" at {min(rates):.3g}-{max(rates):.3g}/s" if len(rates) > 1 and min(rates) != max(rates)
                else f" at {rates[0]:.3g}/s" if rates else "")
        lines.append(f"Link errors: {', '.join(j.element for j in fine)}: corrected errors{span}, normal (below "
                     f"the rates DCGM's health watch fails or warns at; {DCGM_SOURCE}).")
    return lines
