"""The OSU vs linkscope table from docs/runs/scripts/device_mpi_osu.sh's step outputs.

    PYTHONPATH=src python3 tests/benchtables/mpi_osu_table.py STEP_DIR OUT_JSON

Both tools print OSU's layout (``size value`` rows under ``#`` comments), so one parser reads both:
OSU's stdout and ``linkscope bench mpi``'s stdout, through linkscope's own OSU parser
(results.peertools.osu, the one ``linkscope check`` uses). The data check comes from linkscope's JSON.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

KIB, MIB = 1024, 1024 * 1024
TABLE = [  # (test, step stem, sizes, unit)
    ("latency", "lat", (8, KIB), "us"),
    ("bw", "bw", (64 * KIB, MIB, 16 * MIB), "MB/s"),
    ("bw", "bw256", (256 * MIB,), "MB/s"),
    ("bibw", "bibw", (64 * KIB, MIB, 16 * MIB), "MB/s"),
    ("bibw", "bibw256", (256 * MIB,), "MB/s"),
    ("allreduce", "ar", (8, MIB, 64 * MIB), "us"),
]
EXTRA = [  # (label, step, sizes)
    ("linkscope --stage-through-host bw DD", "ls_bw_DD_staged", (MIB, 16 * MIB, 256 * MIB)),
    ("OSU bw DD, btl_smcuda_use_cuda_ipc=0", "osu_bw_DD_noipc", (MIB, 16 * MIB)),
    ("linkscope bw DD, btl_smcuda_use_cuda_ipc=0", "ls_bw_DD_noipc", (MIB, 16 * MIB)),
]


def osu_values(path: Path) -> dict[int, float]:
    """``{size: value as printed}`` of the OSU-layout text at ``path`` (the last row of a size wins); {} when the
    step wrote no file or no table (a failed or skipped step: the parser's reason goes to stderr)."""
    if not path.exists():
        return {}
    from linkscope.errors import SchemaError
    from linkscope.results.peertools import osu

    try:
        run = osu.parse_text(path.read_text(errors="replace"), str(path))
    except SchemaError as e:
        print(f"mpi_osu_table: {e}", file=sys.stderr)
        return {}
    return {m.size_bytes: float(m.extra["osu_value"]) for m in run.measurements}


def _verified(step_dir: Path, name: str) -> bool | None:
    path = step_dir / f"{name}.json"
    if not path.exists():
        return None
    ms = json.loads(path.read_text()).get("measurements", [])
    return bool(ms) and all(m.get("verified") is True for m in ms)


def build(step_dir: Path) -> dict:
    rows = []
    for buffers in ("DD", "HH", "DH"):
        for test, stem, sizes, unit in TABLE:
            if test == "allreduce" and buffers == "DH":
                continue
            osu = osu_values(step_dir / f"osu_{stem}_{buffers}.txt")
            ls = osu_values(step_dir / f"ls_{stem}_{buffers}.txt")
            for size in sizes:
                o, v = osu.get(size), ls.get(size)
                ratio = v / o if (o and v) else None
                rows.append({"test": test, "buffers": buffers, "size_bytes": size, "unit": unit, "osu": o,
                             "linkscope": v, "linkscope_over_osu": ratio,
                             "verified": _verified(step_dir, f"ls_{stem}_{buffers}")})
    extra = []
    for label, step, sizes in EXTRA:
        got = osu_values(step_dir / f"{step}.txt")
        extra.extend({"what": label, "size_bytes": s, "mb_per_s": got.get(s)} for s in sizes)
    rcs = {p.stem: p.read_text().strip() for p in sorted(step_dir.glob("*.rc"))}
    return {"rows": rows, "extra": extra, "exit_codes": rcs}


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if unit == "us" else f"{value:.0f}"


def text(table: dict) -> str:
    out = [f"{'test':<10}{'buf':<4}{'size':>11}{'OSU':>12}{'linkscope':>12}{'ls/OSU':>8}  unit  checked"]
    for r in table["rows"]:
        ratio = f"{r['linkscope_over_osu']:.3f}" if r["linkscope_over_osu"] else "-"
        out.append(f"{r['test']:<10}{r['buffers']:<4}{r['size_bytes']:>11}{_fmt(r['osu'], r['unit']):>12}"
                   f"{_fmt(r['linkscope'], r['unit']):>12}{ratio:>8}  {r['unit']:<5} {r['verified']}")
    for e in table["extra"]:
        out.append(f"{e['what']:<48}{e['size_bytes']:>11}{_fmt(e['mb_per_s'], 'MB/s'):>12} MB/s")
    bad = {k: v for k, v in table["exit_codes"].items() if v != "0" and k != "debian_dd"}
    out.append(f"non-zero exits: {bad or 'none'} (debian_dd: {table['exit_codes'].get('debian_dd')}, 1 expected)")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    step_dir, out_json = Path(argv[1]), Path(argv[2])
    table = build(step_dir)
    out_json.write_text(json.dumps(table, indent=1))
    print(text(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
