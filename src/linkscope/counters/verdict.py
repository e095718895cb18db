"""Which fabric carried a GPU's traffic, in one sentence, and the ``--expect nvlink`` check.

Per GPU: NVLink bytes = TX + RX summed over links; PCIe bytes = TX + RX. Verdicts:

* ``idle``: both below ``idle_bytes`` (default 64 MB: background PCIe chatter of a long job);
* ``nvlink``: NVLink carried at least ``share`` (default 75 %) of the GPU's bytes. Not 90 %: on an
  H200 the PCIe counters see 10-15 MB/s of background (driver, NVML polling, CUDA context set-up),
  so a 1 GiB NVLink copy inside a 7 s Python script reads 87 % NVLink;
* ``pcie``: PCIe carried at least that share;
* ``mixed``: both carried a real part (a job reading input over PCIe and exchanging over NVLink);
* ``unknown``: a counter needed to decide is unsupported or incomplete, so nothing is claimed.

Background: ``watch`` first samples the counters for a short idle baseline (``--baseline``, 1 s) and
hands ``decide`` the bytes that background would have moved over the command's window
(``background_*_bytes``). Only what exceeds ``BACKGROUND_MARGIN`` times that counts as the command's
traffic: on a healthy 4 x H200 node (recorded 2026-11-28) every GPU, busy or idle, showed
111-117 MB of PCIe over a 4 s copy, ~28 MB/s of driver and NVML chatter, which alone is above
``idle_bytes`` and made idle GPUs read "pcie".

``--expect nvlink`` passes when at least one watched GPU's traffic went over NVLink (or was mixed)
and no watched GPU's traffic went over PCIe; see ``expect_nvlink``.

>>> format_bytes_decimal(1_070_000_000), format_bytes_decimal(3_000_000), format_bytes_decimal(512)
('1.07 GB', '3 MB', '512 B')
"""
from __future__ import annotations

from dataclasses import dataclass

from ..discovery.amdsmi_values import PLACEHOLDER_REASON

IDLE_BYTES = 64 * 10**6
NVLINK_SHARE = 0.75
#: how much more than the idle baseline's rate the background may move during the command before the
#: excess counts as the command's traffic (background chatter varies between GPUs by a few %, between
#: seconds by more: 1.5 leaves room for both).
BACKGROUND_MARGIN = 1.5

IDLE = "idle"
VIA_NVLINK = "nvlink"  # the GPU fabric carried it (NVLink, xGMI)
VIA_PCIE = "pcie"
MIXED = "mixed"
UNKNOWN = "unknown"
#: the GPU fabric's name in these sentences; ``watch`` writes each GPU's own fabric's (``LinkFabric.label``) instead
FABRIC_WORD = "NVLink"


def format_bytes_decimal(value: float | None) -> str:
    """Decimal units, three significant digits: ``1.07 GB``, ``3 MB``; ``N/A`` for None."""
    if value is None:
        return "N/A"
    for unit, factor in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= factor:
            text = f"{value / factor:.3g}"
            return f"{text} {unit}"
    return f"{int(value)} B"


@dataclass(frozen=True)
class GpuVerdict:
    """Where one GPU's traffic went.

    Attributes:
        gpu: NVML index.
        nvlink_bytes, pcie_bytes: TX + RX; None when unsupported (never 0 for "unknown").
        nvlink_complete, pcie_complete: every sampling interval was known.
        kind: idle | nvlink | pcie | mixed | unknown.
        message: the sentence for people.
        placeholder: no counter could be read because the library returned placeholders for them
            (amdsmi on MI200): ``--expect`` neither passes nor fails on such a GPU.
    """

    gpu: int
    nvlink_bytes: int | None
    pcie_bytes: int | None
    nvlink_complete: bool
    pcie_complete: bool
    kind: str
    message: str
    placeholder: bool = False


def decide(
    gpu: int,
    nvlink_bytes: int | None,
    pcie_bytes: int | None,
    *,
    nvlink_complete: bool = True,
    pcie_complete: bool = True,
    nvlink_reason: str = "",
    pcie_reason: str = "",
    idle_bytes: int = IDLE_BYTES,
    share: float = NVLINK_SHARE,
    background_nvlink_bytes: float | None = None,
    background_pcie_bytes: float | None = None,
) -> GpuVerdict:
    """The verdict for one GPU from its NVLink and PCIe byte totals (None = unsupported).

    ``background_*_bytes``: what the idle baseline's rate would have moved over the command's window
    (None: no baseline); the verdict is taken on the bytes above ``BACKGROUND_MARGIN`` times it, and
    the sentence names the background. The byte totals in the verdict stay the measured ones.
    """
    nv_text = format_bytes_decimal(nvlink_bytes) if nvlink_bytes is not None else f"unsupported ({nvlink_reason or 'no counter'})"
    pc_text = format_bytes_decimal(pcie_bytes) if pcie_bytes is not None else f"unsupported ({pcie_reason or 'no counter'})"
    if nvlink_bytes is not None and not nvlink_complete:
        nv_text += " (incomplete)"
    if pcie_bytes is not None and not pcie_complete:
        pc_text += " (incomplete)"
    head = f"NVLink carried {nv_text}, PCIe {pc_text}"
    background = [f"{name} {format_bytes_decimal(b)}" for name, b, measured in
                  (("NVLink", background_nvlink_bytes, nvlink_bytes), ("PCIe", background_pcie_bytes, pcie_bytes))
                  if b is not None and measured is not None and b >= 1e6]
    if background:
        head += f" (idle background over the same time: {', '.join(background)})"

    def verdict(kind: str, tail: str) -> GpuVerdict:
        return GpuVerdict(gpu, nvlink_bytes, pcie_bytes, nvlink_complete, pcie_complete, kind, f"{head}: {tail}",
                          placeholder=nvlink_bytes is None and pcie_bytes is None
                          and nvlink_reason.startswith(PLACEHOLDER_REASON))

    nv = _above_background(nvlink_bytes, background_nvlink_bytes)
    pc = _above_background(pcie_bytes, background_pcie_bytes)
    if nvlink_bytes is None and pcie_bytes is None:
        return verdict(UNKNOWN, "no usable counter, cannot tell")
    if nvlink_bytes is None:
        # Without NVLink counters, PCIe traffic alone does not say where GPU-to-GPU data went.
        if pc < idle_bytes:
            return verdict(UNKNOWN, "little PCIe traffic, NVLink not observable")
        return verdict(VIA_PCIE if nvlink_reason == "no active NVLink" else UNKNOWN,
                       "traffic went over PCIe" if nvlink_reason == "no active NVLink" else "NVLink not observable")
    if pcie_bytes is None:
        if nv >= idle_bytes:
            return verdict(VIA_NVLINK, "traffic went over NVLink (PCIe not observable)")
        return verdict(UNKNOWN, "little NVLink traffic, PCIe not observable")
    total = nv + pc
    if total < idle_bytes:
        return verdict(IDLE, "no significant traffic" + (" above the idle background" if background else ""))
    if nv >= share * total:
        return verdict(VIA_NVLINK, "traffic went over NVLink")
    if pc >= share * total:
        return verdict(VIA_PCIE, "traffic went over PCIe")
    return verdict(MIXED, f"traffic split, {100 * nv / total:.0f}% over NVLink")


def _above_background(measured: int | None, background: float | None) -> float:
    """Bytes the command moved beyond the idle background (0 when unsupported)."""
    if measured is None:
        return 0.0
    if background is None:
        return float(measured)
    return max(0.0, measured - BACKGROUND_MARGIN * background)


@dataclass(frozen=True)
class ExpectResult:
    """Outcome of ``--expect``: passed (True), failed (False) or undecided (None: no GPU had a usable
    counter, e.g. amdsmi placeholders on MI200), and why (one line)."""

    expected: str
    passed: bool | None
    reason: str


def expect_nvlink(verdicts: list[GpuVerdict]) -> ExpectResult:
    """Pass when some watched GPU's traffic went over NVLink and none went over PCIe instead.

    ``mixed`` GPUs pass (input over PCIe, exchange over NVLink is normal); ``unknown`` GPUs fail the
    check only when no GPU could confirm NVLink traffic (we cannot confirm what we cannot see).
    """
    on_pcie = [v.gpu for v in verdicts if v.kind == VIA_PCIE]
    confirmed = [v.gpu for v in verdicts if v.kind in (VIA_NVLINK, MIXED)]
    unknown = [v.gpu for v in verdicts if v.kind == UNKNOWN]
    if on_pcie:
        return ExpectResult("nvlink", False, f"traffic of GPU {', '.join(map(str, on_pcie))} went over PCIe, not NVLink")
    if confirmed:
        return ExpectResult("nvlink", True, f"NVLink carried the traffic of GPU {', '.join(map(str, confirmed))}")
    blind = [v.gpu for v in verdicts if v.placeholder]
    if verdicts and len(blind) == len(verdicts):
        return ExpectResult("nvlink", None, f"undecided: the link counters of GPU {', '.join(map(str, blind))} are "
                            "library placeholders (unsupported, not zero); neither passed nor failed")
    if unknown:
        return ExpectResult("nvlink", False, f"cannot confirm NVLink: counters unsupported on GPU {', '.join(map(str, unknown))}")
    return ExpectResult("nvlink", False, "no significant traffic on any watched GPU")


#: ``watch --expect`` values and the check each names (``nvlink``: the GPU fabric, whichever it is)
EXPECTATIONS = {"nvlink": expect_nvlink}
