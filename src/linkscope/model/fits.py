"""The fitted model parameters: on what each was fitted, and where it may be trusted (its scope).

A *fit* is a constant of ``model/params.py`` that no datasheet or library source gives: it was chosen so
that the twin meets some measured rows. Each one here names the machine kind, the GPU count and the
library it was fitted on, the rows, and a scope: the compute capabilities, fabric, GPU counts and node
counts it is meant for (where the mechanism it stands in for plausibly holds). A prediction records the
fits it read (``ModelParams.recording``) and says which of them it applied outside their scope
(``outside_scope``); ``linkscope model params`` lists them. A parameter set by a topology, a calibration
or the user is not the built-in fit any more and carries its own provenance instead.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

_H100X2 = "2 x H100 SXM (NV18 through NVSwitch)"
_H200X4 = "4 x H200 (NV18 through NVSwitch)"
_NCCL = "NCCL 2.28.9, nccl-tests 2.19.6"
_V11_13 = "tests/fixtures/peertools/h100x2-visits11-13"
_N2 = "tests/fixtures/nccl/h100x2-2026-11-25"
_N4 = "tests/fixtures/nccl/h200x4-2026-11-28"
ANY = 1 << 16  # an open upper bound of a scope's GPU or node count


@dataclass(frozen=True)
class Scope:
    """Where a fit is meant to hold. ``compute_capabilities`` empty = any GPU; ``fabric`` one of nvlink,
    pcie, host, any; GPU and node counts inclusive ranges; ``library`` the collective library (or "")."""

    compute_capabilities: tuple[int, ...] = ()
    fabric: str = "any"
    gpus: tuple[int, int] = (1, ANY)
    nodes: tuple[int, int] = (1, 1)
    library: str = ""

    def text(self) -> str:
        cc = "/".join(f"sm{c}" for c in self.compute_capabilities) or "any GPU"
        gpus = f"{self.gpus[0]}-{self.gpus[1]} GPUs" if self.gpus[1] < ANY else "any GPU count"
        nodes = ("1 node" if self.nodes == (1, 1) else "any node count" if self.nodes[1] >= ANY
                 else f"{self.nodes[0]}-{self.nodes[1]} nodes")
        return ", ".join(x for x in (cc, self.fabric, gpus, nodes, self.library) if x)


@dataclass(frozen=True)
class Fit:
    """One fitted parameter: where it came from and its scope."""

    key: str
    machine: str
    gpu_count: int
    library: str
    rows: str
    scope: Scope

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "scope": {**asdict(self.scope), "text": self.scope.text()}}


_HOPPER_NVL = Scope((90,), "nvlink", (2, 8), (1, 1), "NCCL")
_NVL = Scope((80, 90, 100), "nvlink", (2, 8), (1, 1), "NCCL")
_HOST = Scope((), "host", (1, ANY), (1, 1), "")

FITS: dict[str, Fit] = {f.key: f for f in (
    Fit("nccl_eager_launch_us", _H100X2, 2, _NCCL, f"{_V11_13}/visit1{{1,2}}: eager minus -G 10, 36 pairs 4-128 MiB",
        Scope((), "any", (1, ANY), (1, ANY), "NCCL")),
    Fit("nccl_eager_host_per_gpu_channel_us", _H100X2, 2, _NCCL, f"{_N2}/all_reduce_rerun.txt 8 B-512 KiB",
        Scope((), "any", (1, ANY), (1, ANY), "NCCL")),
    Fit("nccl_eager_host_p2p_per_gpu_us", _H100X2, 2, _NCCL,
        f"{_N2}/sendrecv.txt, alltoall.txt, all_reduce.txt fastest 8 B-1 KiB rows", Scope((), "any", (1, ANY), (1, ANY), "NCCL")),
    Fit("nccl_ring_local_cta_gb_per_s", _H100X2, 2, _NCCL,
        f"{_V11_13}: allgather -G 10 64 MiB with and without NCCL_GRAPH_REGISTER", _NVL),
    Fit("nccl_ring_local_hidden_per_step", _H100X2, 2, _NCCL,
        f"{_V11_13}/visit12: allgather -G 10 1 GiB with and without registration", _NVL),
    Fit("nccl_simple_ring_latency_us", _H100X2, 2, _NCCL, f"{_V11_13}: registered allgather -G 10 4-64 MiB, 15 rows",
        _NVL),
    Fit("nccl_p2p_channel_factor", _H100X2, 2, _NCCL, f"{_N2}/sendrecv.txt 2-16 MiB slope", _NVL),
    Fit("nccl_p2p_registered_channel_factor", _H200X4, 4, _NCCL, f"{_N4}/sendrecv-G20.txt 1-64 MiB slope",
        _HOPPER_NVL),
    Fit("nccl_p2p_registered_fixed_us", _H200X4, 4, _NCCL, f"{_N4}/sendrecv-G20.txt 1-64 MiB intercept", _HOPPER_NVL),
    Fit("nccl_p2p_fanout_efficiency", _H200X4, 4, _NCCL, f"{_N4}/alltoall-eager.txt 512 MiB",
        Scope((90,), "nvlink", (3, 8), (1, 1), "NCCL")),
    Fit("nccl_ll_thread_mb_per_s", _H100X2, 2, _NCCL, f"{_N2}/all_reduce_Ring_LL.txt 1 GiB", _NVL),
    Fit("nccl_ll128_thread_mb_per_s", _H100X2, 2, _NCCL, f"{_N2}/all_reduce_Ring_LL128.txt 1 GiB", _NVL),
    Fit("pcie_duplex_efficiency_down", _H100X2, 2, "nvbandwidth v0.8",
        "tests/fixtures/peertools/h100x2/nvbandwidth.txt host_to_device_bidirectional_memcpy_ce", _HOST),
    Fit("pageable_staging_chunk_bytes", _H100X2, 2, "linkscope survey", "docs/runs/survey-h100x2-2026-11-25.json d2h-pageable",
        _HOST),
    Fit("host_cache_bytes", "public forum sweep (NVIDIA developer forum t/56270)", 1, "", "pageable h2d 8 MB-1 GB", _HOST),
    Fit("host_copy_cache_speedup", "public forum sweep (NVIDIA developer forum t/56270)", 1, "",
        "pageable h2d plateaus 11.4 / 8.33 GB/s", _HOST),
)}


@dataclass(frozen=True)
class Context:
    """What a prediction ran on, as a fit's scope reads it."""

    compute_capability: int | None
    fabric: str
    gpus: int
    nodes: int
    library: str = "NCCL"


def outside_scope(fit: Fit, ctx: Context) -> str | None:
    """Why ``fit`` does not cover ``ctx`` (one phrase), or None when it does."""
    s = fit.scope
    why = []
    if s.compute_capabilities and ctx.compute_capability not in s.compute_capabilities:
        have = f"sm{ctx.compute_capability}" if ctx.compute_capability else "a GPU NCCL's tuner does not describe"
        why.append(f"{have}, not {'/'.join(f'sm{c}' for c in s.compute_capabilities)}")
    if s.fabric not in ("any", "host") and ctx.fabric != s.fabric:
        why.append(f"{ctx.fabric}, not {s.fabric}")
    if not s.gpus[0] <= ctx.gpus <= s.gpus[1]:
        why.append(f"{ctx.gpus} GPUs")
    if not s.nodes[0] <= ctx.nodes <= s.nodes[1]:
        why.append(f"{ctx.nodes} nodes")
    if s.library and ctx.library and s.library != ctx.library:
        why.append(f"{ctx.library}, not {s.library}")
    return "; ".join(why) or None


def fits_report(used: Iterable[str], ctx: Context, provenance: Mapping[str, str] | None = None,
                defaults: Iterable[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the built-in fits among ``used`` keys, one note per fit applied outside its scope). A key whose
    value is not the built-in default (``defaults``: the keys still at it) is not the fit any more."""
    at_default = set(defaults)
    mine = tuple(sorted(k for k in set(used) if k in FITS and k in at_default))
    notes = []
    for key in mine:
        why = outside_scope(FITS[key], ctx)
        if why:
            f = FITS[key]
            notes.append(f"{key} was fitted on {f.machine} ({f.gpu_count} GPUs, {f.library or 'no library'}); "
                         f"scope {f.scope.text()}; applied to {why}")
    return mine, tuple(notes)
