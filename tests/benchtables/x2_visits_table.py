"""The final two-GPU tables of issue 27 from the recorded visits 4-9 (tests/fixtures/peertools/h100x2-visits4-9)
and 11-13 (h100x2-visits11-13): peer copies beside nvbandwidth -b (visits 7-9), remote-read latency beside
nvbandwidth (visits 6 and 13), host-read latency beside nvbandwidth (visits 12-13), GPU-aware MPI beside OSU 5.3
(visits 6, 8, 11-13) and the bw loop probes (visits 11 and 13), interleaved rounds in one call each. Ratios are linkscope / peer for
bandwidth and peer / linkscope for latency, so >= 1.00 means linkscope at least equal; each tool's value is
the median over the call's rounds.

    PYTHONPATH=src python3 tests/benchtables/x2_visits_table.py [DIR]   -> markdown on stdout

Every number is read by the project's parsers (results.peertools: nvbandwidth, OSU), as `linkscope check` reads them.
"""
from __future__ import annotations

import functools
import json
import statistics
import sys
from pathlib import Path

from linkscope.results.peertools.nvbandwidth import parse_text as parse_nvbandwidth
from linkscope.results.peertools.osu import parse_text as parse_osu

MIB = 1024 * 1024
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tests/fixtures/peertools/h100x2-visits4-9"
LATER_DIR = Path(__file__).resolve().parents[2] / "tests/fixtures/peertools/h100x2-visits11-13"
#: linkscope's method -> nvbandwidth's testcase it is compared with
COPIES = {"ce": ("ce-write", "memcpy_write_ce"), "sm-push": ("sm-push", "memcpy_write_sm"),
          "sm-pull": ("sm-pull", "memcpy_read_sm")}


def nvbandwidth_gbps(path: Path, size_bytes: int, method: str) -> float:
    """Median GB/s over GPU pairs of one nvbandwidth text output for one of its peer methods."""
    run = parse_nvbandwidth(path.read_text(), str(path), size_bytes)
    values = [m.median_gb_per_s for m in run.measurements
              if m.method == method and m.pattern == "matrix" and m.direction == "uni" and m.median_gb_per_s]
    return statistics.median(values)


def linkscope_gbps(path: Path, method: str, size_bytes: int) -> float:
    doc = json.loads(path.read_text())
    values = [m["median_gb_per_s"] for m in doc["measurements"] if m.get("status") == "ok" and m["method"] == method
              and m["size_bytes"] == size_bytes and m.get("direction", "uni") == "uni"]
    return statistics.median(values)


def copies(d: Path) -> list[str]:
    lines = ["| method (nvbandwidth testcase) | size | visit | nvbandwidth GB/s (rounds) | linkscope GB/s (rounds) | ratio |",
             "|---|---|---|---|---|---|"]
    sizes = "bench-sizes-r{r}.json"
    plan = [(1, 7, 2, sizes, "nvbandwidth-b1-r{r}.txt"), (1, 8, 2, sizes, "nvbandwidth-b1-r{r}.txt"),
            (16, 7, 2, sizes, "nvbandwidth-b16-r{r}.txt"), (16, 8, 2, sizes, "nvbandwidth-b16-r{r}.txt"),
            (64, 9, 3, "bench-64-r{r}.json", "nvbandwidth-b64-r{r}.txt")]
    for mib, visit, rounds, ls_name, nv_name in plan:
        for method, (nv_method, testcase) in COPIES.items():
            base = d / f"visit{visit}"
            nv = [nvbandwidth_gbps(base / "peers" / nv_name.format(r=r), mib * MIB, nv_method) for r in range(1, rounds + 1)]
            ls = [linkscope_gbps(base / "linkscope" / ls_name.format(r=r), method, mib * MIB) for r in range(1, rounds + 1)]
            ratio = statistics.median(ls) / statistics.median(nv)
            lines.append(f"| {method} ({testcase}) | {mib} MiB | {visit} | {' / '.join(f'{x:.1f}' for x in nv)} | "
                         f"{' / '.join(f'{x:.1f}' for x in ls)} | {ratio:.3f} |")
    return lines


def _nvbandwidth_latency(path: Path, method: str, src: int | str, dst: int) -> list[float]:
    run = parse_nvbandwidth(path.read_text(), str(path), 0)
    return [m.latency_us for m in run.measurements if m.latency_us and m.method == method and (m.src, m.dst) == (src, dst)]


def _linkscope_latency(path: Path, method: str, src: int | str, dst: int) -> list[float]:
    doc = json.loads(path.read_text())
    return [m["latency_us"] for m in doc["measurements"]
            if m.get("latency_us") and m["method"] == method and (m["src"], m["dst"]) == (src, dst)]


def _latency_row(label: str, visit: int, nv: list[float], ls: list[float]) -> str:
    return (f"| {label} | {visit} | {' / '.join(f'{x:.4f}' for x in nv)} | {' / '.join(f'{x:.4f}' for x in ls)} | "
            f"{statistics.median(nv) / statistics.median(ls):.3f} |")


def latency(d: Path, later: Path = LATER_DIR) -> list[str]:
    """Remote-read (visit 6: the all-SM chase; visit 13: the same on the final code) and host-read (visit 12:
    docs/runs/scripts/chase_modes.py's each-SM-in-turn at 2,000 hops, now the engine's; visit 13: the engine) beside
    nvbandwidth's latency tests of the same call. ratio = nvbandwidth / linkscope (>= 1: linkscope as fast)."""
    lines = ["| memory read (reader <- owner) | visit | nvbandwidth latency_sm (µs, 2 runs) | linkscope (µs, 2 runs) | ratio |",
             "|---|---|---|---|---|"]
    for reader, owner in ((0, 1), (1, 0)):
        for visit, base, nv_name in ((6, d / "visit6", "nvbandwidth-latency-r{r}.txt"),
                                     (13, later / "visit13", "nvbandwidth-latency-r{r}.txt")):
            nv = [x for r in (1, 2) for x in _nvbandwidth_latency(base / "peers" / nv_name.format(r=r), "remote-read", reader, owner)]
            ls = [x for r in (1, 2) for x in _linkscope_latency(base / f"linkscope/latency-r{r}.json", "remote-read", owner, reader)]
            lines.append(_latency_row(f"remote: GPU{reader} <- GPU{owner}", visit, nv, ls))
    for reader in (0, 1):
        base = later / "visit12"
        nv = [x for r in (1, 2) for x in _nvbandwidth_latency(base / f"peers/nvbandwidth-latency-r{r}.txt", "host-read", "host", reader)]
        ls = [json.loads((base / f"linkscope/chase-modes-r{r}.json").read_text())[f"GPU{reader} reads host: in-turn 2000"][0]
              for r in (1, 2)]
        lines.append(_latency_row(f"host: GPU{reader} <- host (chase_modes in turn)", 12, nv, ls))
        base = later / "visit13"
        nv = [x for r in (1, 2) for x in _nvbandwidth_latency(base / f"peers/nvbandwidth-latency-r{r}.txt", "host-read", "host", reader)]
        ls = [x for r in (1, 2) for x in _linkscope_latency(base / f"linkscope/latency-r{r}.json", "host-read", "host", reader)]
        lines.append(_latency_row(f"host: GPU{reader} <- host", 13, nv, ls))
    return lines


@functools.cache
def osu_values(path: Path) -> dict[int, float]:
    """``{size: value as printed}`` of one OSU-layout text (the last row of a size wins); {} without the file."""
    if not path.exists():
        return {}
    run = parse_osu(path.read_text(errors="replace"), str(path))
    return {m.size_bytes: float(m.extra["osu_value"]) for m in run.measurements}


def osu_value(path: Path, size: int) -> float | None:
    return osu_values(path).get(size)


def mpi(d: Path, later: Path = LATER_DIR) -> list[str]:
    lines = ["| test | buffers | size | visit | OSU 5.3 (rounds) | linkscope bench mpi (rounds) | ratio |", "|---|---|---|---|---|---|---|"]
    big = (16 * MIB, 64 * MIB, 256 * MIB)
    plan = [("latency", "lat_DD", "DD", (8, 1024), 8, "abc", ""), ("latency", "lat_DD", "DD", (8, 1024), 6, "abc", ""),
            ("latency", "lat_HH", "HH", (8, 1024), 6, "abc", ""), ("allreduce", "ar_HH", "HH", (8,), 6, "abc", ""),
            ("bw", "bw_DD", "DD", (64 * 1024, MIB, 16 * MIB, 64 * MIB, 256 * MIB), 8, "ab", ""),
            ("bibw", "bibw_DD", "DD", (64 * 1024, MIB, 16 * MIB, 64 * MIB, 256 * MIB), 8, "ab", ""),
            ("bw", "bw_HH", "HH", (64 * 1024, MIB, 16 * MIB), 6, "ab", ""),
            ("bw", "bw_DD", "DD", big, 11, "ab", ""), ("bw", "bw_DD", "DD", big, 12, "ab", ""),
            ("bw", "bw_DD", "DD", big, 12, "ab", "_warm150"), ("bibw", "bibw_DD", "DD", big, 12, "ab", ""),
            ("bibw", "bibw_DD", "DD", big, 12, "ab", "_warm150"),
            ("bw", "bw_DD", "DD", big, 13, "ab", ""), ("bibw", "bibw_DD", "DD", big, 13, "ab", ""),
            ("bw", "bw_DD", "DD", (16 * MIB, 64 * MIB), 13, "ab", "_1first")]
    notes = {"_warm150": " (--warmup 150)", "_1first": " (1 MiB first)"}
    for test, stem, buffers, sizes, visit, rounds, variant in plan:
        if visit >= 11:
            step = later / f"visit{visit}" / "mpi"
        else:
            step = d / f"visit{visit}" / "mpi" / ("r7" if visit == 8 else "r5")
        for size in sizes:
            osu = [osu_value(step / f"osu_{stem}_{r}.txt", size) for r in rounds]
            ls = [osu_value(step / f"ls_{stem}{variant}_{r}.txt", size) for r in rounds]
            if None in osu or None in ls:
                continue
            a, b = statistics.median(osu), statistics.median(ls)  # type: ignore[type-var]
            ratio = a / b if test in ("latency", "allreduce") else b / a
            fmt = "{:.2f}" if test in ("latency", "allreduce") else "{:,.0f}"
            label = f"{size // MIB} MiB" if size >= MIB else (f"{size // 1024} KiB" if size >= 1024 else f"{size} B")
            lines.append(f"| {test}{notes.get(variant, '')} | {buffers} | {label} | {visit} | {' / '.join(fmt.format(x) for x in osu)} | "
                         f"{' / '.join(fmt.format(x) for x in ls)} | {ratio:.3f} |")
    return lines


def probes(later: Path = LATER_DIR) -> list[str]:
    """osu_bw's loop at 16 and 64 MiB D D in bw_probe.c / bw_probe.py (variants alternating in blocks of 20 windows
    in one process) beside the same call's osu_bw (median of its rounds): MB/s, median and range over blocks."""
    lines = ["| visit | size | variant | blocks | median MB/s | range | / osu_bw |", "|---|---|---|---|---|---|---|"]
    for visit, mibs, files in ((11, (16, 64), ("c_probe_{mib}_{r}.txt", "py_probe_{mib}_{r}.txt")),
                               (13, (16,), ("py_probe_{mib}_{r}.txt",))):
        step = later / f"visit{visit}" / "mpi"
        for mib in mibs:
            osu = statistics.median(osu_value(step / f"osu_bw_DD_{r}.txt", mib * MIB) or 0.0 for r in "ab")
            blocks: dict[str, list[float]] = {}
            for name in files:
                for r in "ab":
                    for line in (step / name.format(mib=mib, r=r)).read_text().splitlines():
                        if line.endswith(" MB/s") and " block " in line:
                            words = line.split()
                            blocks.setdefault(f"C {words[2]}" if words[0] == "C" else f"mpi4py {words[1]}", []).append(float(words[-2]))
            for variant, values in blocks.items():
                med = statistics.median(values)
                lines.append(f"| {visit} | {mib} MiB | {variant} | {len(values)} | {med:,.0f} | {min(values):,.0f}-{max(values):,.0f} | "
                             f"{med / osu:.3f} |")
    return lines


def main(argv: list[str]) -> int:
    d = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    for title, table in (("Peer copies", copies(d)), ("Latency", latency(d)), ("GPU-aware MPI", mpi(d)),
                         ("The bw loop alone", probes())):
        print(f"### {title}\n")
        print("\n".join(table))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
