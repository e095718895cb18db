"""TransferBench output (its summary text and its ``OUTPUT_TO_CSV=1`` form) as Measurements.

The layout, from TransferBench 1.52's src/TransferBench.cpp (github.com/ROCm/TransferBench:
``ReportResults``, ``RunPeerToPeerBenchmarks``, ``Transfer::SrcToStr``; fetched snapshot 788840d):

* ``TransferBench v1.52`` first;
* a Test of a config file or the command line: one line per Transfer,
  ``Transfer 03 | 33.520 GB/s | 2.002 ms | 67108864 bytes | G0 -> GPU00:004 -> G1`` (``,``
  instead of ``|`` in CSV), under ``Executor:`` lines (newer versions) and followed by
  ``Aggregate (CPU)``; the Transfers of one Test run at the same time. Memory: ``G``/``F`` GPU
  (coarse/fine grained), ``C``/``B`` pinned host, ``U`` unpinned host, ``N`` none; executor ``GPU``
  (kernel on its CUs), ``DMA`` (copy engine), ``CPU`` (host threads);
* the ``p2p`` preset: ``Bytes Per Direction N``, then ``Unidirectional|Bidirectional copy peak
  bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX|DMA)``, a header of ``CPU nn`` /
  ``GPU nn`` columns and rows ``GPU nn  ->`` (bidirectional also ``<-`` and ``<->``, the sum); with
  SHOW_ITERATIONS also ``min``/``max``/``sd`` rows (left out: the ``->`` row is the mean). The
  executor is the source with local read / remote write, the destination with remote read.

* the ``healthcheck`` preset (``RunHealthCheck``, MI300 only): ``Testing unidirectional reads from
  CPU``, ``... writes to  CPU``, ``Testing bidirectional  reads + writes`` (one GPU's kernel copying
  64 MiB host -> GPU, GPU -> host, both at once: the sum), ``Testing all-to-all XGMI copies`` (every
  GPU writing 64 MiB to every other at once), each ``PASS`` (no number printed) or ``FAIL`` with
  `` GPU 00: Measured: 48.20 GB/s      Criteria: 50.00 GB/s`` / `` GPU 00 to GPU 01: ...`` lines.

Methods: a GPU kernel executor is ``sm-push`` when it is the source GPU, ``sm-pull`` when it is the
destination; a DMA executor is ``ce`` (source) or ``ce-read`` (destination); host memory is
``host`` (``h2d``/``d2h`` with DMA, ``h2d-pageable`` for ``U``). CPU executors and transfers with
several sources or destinations are kept with method ``transferbench.<exe>`` (not modelled).
"""
from __future__ import annotations

import re
from typing import Any

from ...errors import SchemaError
from ...patterns.methods import CE, CE_READ, D2H, D2H_PAGEABLE, H2D, H2D_PAGEABLE, SM_PULL, SM_PUSH
from ...userfiles import refuse_malformed
from ..schema import HOST, Endpoint, Status
from .common import (
    MAX_GB_PER_S,
    MAX_GPUS,
    Collector,
    Lines,
    PeerRun,
    RunContext,
    check_rate,
    integer,
    number,
    rate_in_bounds,
    unread_line,
)

TOOL = "TransferBench"
_VERSION = re.compile(r"^TransferBench v(\S+)")
_TRANSFER = re.compile(r"^Transfer\s+(\d+)\s*[|,]\s*([\d.eE+-]+|N/A)\s*GB/s\s*[|,]\s*([\d.eE+-]+)\s*ms\s*[|,]\s*(\d+)\s*bytes\s*[|,]\s*"
                       r"(\S+)\s*->\s*(CPU|GPU|DMA|NIC|[CGDIN])\s*(\d+)(?:\.(?:\*|\d+))?(?::(\d+))?\s*->\s*(\S+)")
# The executor of a Transfer line: v1.52 prints its long name and ``%02d`` (``GPU00:004``, ExeTypeName in
# src/include/TransferBench.hpp); from the v1.6x header library it prints the letter of ExeTypeStr and ``%03d``
# (``G000:008``: ``%s -> %c%03d%s:%03d -> %s`` with ``ExeTypeStr[6] = "CGDIN"``, I and N the NIC executors,
# src/header/TransferBench.hpp at github.com/gilbertlee-amd/TransferBench 7644fef; seen in the a2a output
# of the ROCm blog 'mi300x-rccl-xgmi', v1.60.00).
_EXE_LETTER = {"C": "CPU", "G": "GPU", "D": "DMA", "I": "NIC", "N": "NIC"}
_P2P_TITLE = re.compile(r"^(Uni|Bi)directional copy peak bandwidth GB/s \[(Local|Remote) read / (Local|Remote) write\] "
                        r"\(GPU-Executor: (GFX|DMA)\)")
_DEVICE_COL = re.compile(r"(CPU|GPU)\s*(\d+)")
_MEM = re.compile(r"^([CGBFUNM])(\d*)$")
_HEALTH_BYTES = 64 * 1024 * 1024  # RunHealthCheck: t.numBytes = 64*1024*1024


def looks_like(text: str) -> bool:
    head = text[:20000]
    return bool(re.search(r"^TransferBench v|copy peak bandwidth GB/s|^GPU-GFX Scaling benchmark|^\s*Transfer \d+\s*[|,].*GB/s|"
                          r"^Testing (unidirectional|bidirectional|all-to-all XGMI)", head, re.M))


def _memory(token: str, lines: Lines, n: int) -> tuple[Endpoint | None, str]:
    """(endpoint, memory kind letter) of one memory token; None for several or none."""
    m = _MEM.match(token.upper())
    if not m:
        return None, "?"
    letter, index = m.group(1), m.group(2)
    if letter == "N":
        return None, "N"
    if letter in "GF":
        return integer(index or "0", lines, n, "GPU index", limit=MAX_GPUS), letter
    return HOST, letter


def _method(exe: str, exe_index: int, src: Endpoint | None, dst: Endpoint | None, src_kind: str, dst_kind: str) -> str:
    """The method-table key of a TransferBench transfer (see the module doc)."""
    if src is None or dst is None or exe in ("CPU", "NIC"):
        return f"transferbench.{exe.lower()}"
    pageable = "U" in (src_kind, dst_kind)
    if src == HOST and dst == HOST:
        return f"transferbench.{exe.lower()}"
    if exe == "DMA":
        if src == HOST:
            return H2D_PAGEABLE.key if pageable else H2D.key
        if dst == HOST:
            return D2H_PAGEABLE.key if pageable else D2H.key
        if src == dst:
            return "local"
        return CE.key if exe_index == src else (CE_READ.key if exe_index == dst else "transferbench.dma")
    if src == dst:
        return "local"
    if exe_index == src:
        return SM_PUSH.key
    if exe_index == dst:
        return SM_PULL.key
    return "transferbench.gpu"


@refuse_malformed("TransferBench output")
def parse_text(text: str, source: str) -> PeerRun:
    lines = Lines(text, source)
    out = Collector(TOOL, "", source)
    notes: list[str] = []
    test = 0
    pending: list[tuple[int, dict[str, Any]]] = []  # transfers of the current Test
    p2p_size = 0
    p2p: dict[str, Any] | None = None

    scaling: dict[str, Any] | None = None  # the scaling preset's table
    summary = False  # inside the a2a preset's summary matrix
    health = ""  # the healthcheck test whose FAIL lines follow
    health_pairs: list[tuple[int, int, float, float, int]] = []

    def flush_health() -> None:
        """All-to-all XGMI lines: every GPU wrote to every other at once (the GPUs named are the
        least there were)."""
        if not health_pairs:
            return
        n_gpus = max(max(a, b) for a, b, _, _, _ in health_pairs) + 1
        flows = [[a, b] for a in range(n_gpus) for b in range(n_gpus) if a != b]
        for a, b, gb, limit, n in health_pairs:
            out.add(n, a, b, SM_PUSH.key, "healthcheck", _HEALTH_BYTES, gb_per_s=gb, group=-1,
                    extra={"test": "healthcheck all-to-all XGMI", "criterion_gb_per_s": limit, "transfers": flows})
        notes.append(f"healthcheck all-to-all: the concurrency is taken from the GPUs named ({n_gpus}); TransferBench "
                     "prints only the failing pairs")
        health_pairs.clear()

    def flush_test() -> None:
        flows = [[t["src"], t["dst"]] for _, t in pending if t["src"] is not None and t["dst"] is not None]
        for n, t in pending:
            extra = {"test": f"Test {test}", "transfer": t["index"], "executor": t["exe"], "subexecutors": t["ses"],
                     "transferbench": t["text"]}
            if len(flows) > 1:
                extra["transfers"] = flows
            src = t["src"] if t["src"] is not None else HOST
            dst = t["dst"] if t["dst"] is not None else HOST
            if t.get("sample_lines"):  # SHOW_ITERATIONS: each iteration's rate, with its line
                extra["iterations_gb_per_s"] = t["samples"]
                extra["iteration_lines"] = t["sample_lines"]
            out.add(n, src, dst, t["method"], "transferbench", t["bytes"], gb_per_s=t["gb"], group=test, extra=extra)
        pending.clear()

    for n, raw in lines:
        line = raw.strip()
        if not line:
            continue
        m = _VERSION.match(line)
        if m:
            out.version = m.group(1)
            continue
        m = re.match(r"^Testing (unidirectional reads from CPU|unidirectional writes to\s+CPU|bidirectional\s+reads \+ writes|"
                     r"all-to-all XGMI copies)", line)
        if m:
            health = m.group(1).split()[0] + ("-read" if "reads from" in m.group(1) else "-write" if "writes to" in m.group(1) else "")
            if line.rstrip(". ").endswith("PASS") or line.endswith("PASS"):
                notes.append(f"{source}:{n}: healthcheck {m.group(1).split()[0]} {'reads' if 'read' in health else ''}: PASS "
                             "(TransferBench prints no number for a pass)")
            continue
        m = re.match(r"^GPU (\d+) to GPU (\d+):\s*([\d.]+) GB/s\s+Criteria:\s*([\d.]+) GB/s", line)
        if m and health.startswith("all-to-all"):
            health_pairs.append((integer(m.group(1), lines, n, "GPU index", limit=MAX_GPUS),
                                 integer(m.group(2), lines, n, "GPU index", limit=MAX_GPUS),
                                 check_rate(number(m.group(3), lines, n), lines, n), number(m.group(4), lines, n), n))
            continue
        m = re.match(r"^GPU (\d+): Measured:\s*([\d.]+) GB/s\s+Criteria:\s*([\d.]+) GB/s", line)
        if m and health:
            gpu = integer(m.group(1), lines, n, "GPU index", limit=MAX_GPUS)
            rate = check_rate(number(m.group(2), lines, n), lines, n)
            extra = {"test": f"healthcheck {health}", "criterion_gb_per_s": number(m.group(3), lines, n)}
            if health == "unidirectional-read":  # the GPU's kernel reads host memory
                out.add(n, HOST, gpu, SM_PULL.key, "healthcheck", _HEALTH_BYTES, gb_per_s=rate, extra=extra)
            elif health == "unidirectional-write":  # ... writes host memory
                out.add(n, gpu, HOST, SM_PUSH.key, "healthcheck", _HEALTH_BYTES, gb_per_s=rate, extra=extra)
            else:  # both at once, the sum
                out.add(n, HOST, gpu, SM_PULL.key, "healthcheck", _HEALTH_BYTES, gb_per_s=rate, direction="bi", scope="total",
                        extra={**extra, "transfers": [[HOST, gpu], [gpu, HOST]]})
            continue
        if re.match(r"^Test \d+:", line):
            flush_test()
            test += 1
            continue
        m = _TRANSFER.match(line)
        if m:
            p2p = None
            if not pending and test == 0:
                test = 1
            gb = None if m.group(2) == "N/A" else check_rate(number(m.group(2), lines, n), lines, n)
            size = integer(m.group(4), lines, n, "bytes")
            src, src_kind = _memory(m.group(5), lines, n)
            dst, dst_kind = _memory(m.group(9), lines, n)
            exe, exe_index = _EXE_LETTER.get(m.group(6), m.group(6)), integer(m.group(7), lines, n, "executor index", limit=MAX_GPUS)
            method = _method(exe, exe_index, src, dst, src_kind, dst_kind)
            if gb is not None:
                pending.append((n, {"index": int(m.group(1)), "gb": gb, "bytes": size, "src": src, "dst": dst, "exe": f"{exe}{exe_index}",
                                    "ses": int(m.group(8)) if m.group(8) else None, "method": method,
                                    "text": f"{m.group(5)} -> {exe}{exe_index} -> {m.group(9)}"}))
            continue
        m = re.match(r"^Iter\s+(\d+)\s*[|,]\s*([\d.eE+-]+)\s*GB/s", line)
        if m and pending:  # SHOW_ITERATIONS: one sample of the Transfer above (its line holds the mean)
            pending[-1][1].setdefault("samples", []).append(check_rate(number(m.group(2), lines, n), lines, n))
            pending[-1][1].setdefault("sample_lines", []).append(n)
            continue
        if re.match(r"^StandardDev\s*[|,]", line):
            out.skip(n, "the standard deviation of the Transfer's iterations (kept in its samples)")
            continue
        if re.match(r"^Executor:\s*(CPU|GPU|DMA)\s*\d+\s*[|,]", line):
            out.skip(n, "the executor's total over its Transfers: not judged (its Transfers are)")
            continue
        if line.startswith("Summary:"):  # the a2a preset's matrix repeats its Transfers (v1.60)
            summary = True
            continue
        if summary and re.match(r"^(GPU\s*\d+\s|RTotal\s|Average\s+bandwidth|Aggregate bandwidth)", line):
            out.skip(n, "the all-to-all summary: the Transfers above, repeated, summed or averaged (the Transfers are judged)")
            continue
        if line.startswith("Aggregate (CPU)"):
            out.skip(n, "the Test's aggregate, timed on the CPU: not judged (its Transfers are)")
            flush_test()
            test += 1
            continue
        m = re.match(r"^Bytes Per Direction\s*[,\s]\s*(\d+)", line)
        if m:
            p2p_size = integer(m.group(1), lines, n, "bytes")
            continue
        m = _P2P_TITLE.match(line)
        if m:
            flush_test()
            p2p = {"bi": m.group(1) == "Bi", "remote_read": m.group(2) == "Remote", "dma": m.group(4) == "DMA",
                   "cols": None, "group": 1000 + n}
            continue
        if p2p is not None:
            if p2p["cols"] is None and ("\\" in line or "DST" in line):
                p2p["cols"] = [(k, int(i)) for k, i in _DEVICE_COL.findall(line.split("\\", 1)[-1])]
                continue
            row = re.match(r"^(CPU|GPU)\s*(\d+)\s*(<->|->|<-|min|max|sd)\s*[,]?\s*(.*)$", line)
            if row is None or p2p["cols"] is None:
                continue
            if row.group(3) in ("min", "max", "sd"):
                out.skip(n, f"the {row.group(3)} over iterations of the row above (its '->' row is the mean, read)")
                continue
            values = [c for c in re.split(r"[,\s]+", row.group(4)) if c]
            cols = p2p["cols"]
            if len(values) != len(cols):
                out.skip(n, f"{len(values)} values under {len(cols)} columns")
                continue
            _p2p_row(out, lines, n, p2p, (row.group(1), int(row.group(2))), row.group(3), cols, values, p2p_size)
            continue
        m = re.match(r"^- Copying (\d+) bytes from GPU (\d+) to other devices", line)
        if m:  # the scaling preset (RunScalingBenchmark)
            flush_test()
            scaling = {"bytes": integer(m.group(1), lines, n, "bytes"),
                       "exe": integer(m.group(2), lines, n, "GPU index", limit=MAX_GPUS), "cols": None, "rows": []}
            continue
        if scaling is not None:
            if line.startswith("NumCUs"):
                scaling["cols"] = [(k, int(i)) for k, i in _DEVICE_COL.findall(line)]
                continue
            cells = [c for c in re.split(r"[,\s]+", line) if c]
            if scaling["cols"] is not None and cells and (cells[0].isdigit() or cells[0] == "Best"):
                _scaling_row(out, lines, n, scaling, cells[0], line)
                continue
    flush_test()
    flush_health()
    out.cut(lines)
    if not out.items:
        raise SchemaError(f"{source}: no TransferBench result in it (no 'Transfer NN | ... GB/s' line or p2p matrix)",
                          hint="pass the output of a TransferBench config run or of its p2p preset")
    if out.unread:
        notes.append(unread_line(out.unread))
    return PeerRun(TOOL, out.version, source, tuple(out.items), (), {}, tuple(notes), unread=tuple(out.unread),
                   complete=lines.cut_line is None,
                   incomplete="" if lines.cut_line is None else "the last line has no final newline (cut)",
                   run_context=RunContext(launcher=lines.launcher))


def _scaling_row(out: Collector, lines: Lines, n: int, scaling: dict[str, Any], label: str, line: str) -> None:
    """One row of the scaling preset: GPU ``exe``'s kernel with ``NumCUs`` CUs copying ``bytes`` to each
    device (``%7.2f`` per column; the ``Best`` row adds ``(CUs)``). The numbers of a row below the best
    CU count are kept but not judged (they measure the CUs given, not the link); the Best row is read."""
    cols = scaling["cols"]
    best = label == "Best"
    body = line.split(label, 1)[1]
    values = [f"{a}({b})" for a, b in re.findall(r"([\d.]+)\(\s*(\d+)\)", body)] if best else \
        [c for c in re.split(r"[,\s]+", body) if c]
    if len(values) != len(cols):
        out.skip(n, f"{len(values)} values under {len(cols)} columns")
        return
    exe = scaling["exe"]
    for (kind, index), token in zip(cols, values):
        m = re.match(r"^([\d.]+)(?:\(\s*(\d+)\))?$", token)
        if not m:
            out.skip(n, f"{token[:20]!r} is not a rate")
            continue
        gb = number(m.group(1), lines, n)
        if not rate_in_bounds(gb):
            out.skip(n, f"a rate outside 0 .. {MAX_GB_PER_S:g} GB/s")
            continue
        dst: Endpoint = HOST if kind == "CPU" else index
        method = "local" if dst == exe else SM_PUSH.key
        cus = int(m.group(2)) if best and m.group(2) else (None if best else int(label))
        extra = {"test": "scaling", "executor": f"GPU{exe}", "subexecutors": cus, "best": best}
        if best:
            out.add(n, exe, dst, method, "scaling", scaling["bytes"], gb_per_s=gb, extra=extra)
        else:
            out.add(n, exe, dst, method, "scaling", scaling["bytes"], gb_per_s=gb, extra=extra, status=Status.WAIVED,
                    reason=f"{label} CUs of the scaling sweep: it measures the CUs given, not the link (the Best row is judged)")


def _end(device: tuple[str, int]) -> Endpoint:
    return HOST if device[0] == "CPU" else device[1]


def _p2p_row(out: Collector, lines: Lines, n: int, p2p: dict[str, Any], row: tuple[str, int], arrow: str,
             cols: list[tuple[str, int]], values: list[str], size: int) -> None:
    """Measurements of one row of the p2p preset's matrix."""
    exe_kind = "DMA" if p2p["dma"] else "GPU"
    for col, token in zip(cols, values):
        if token == "N/A":
            continue
        gb = check_rate(number(token, lines, n), lines, n)
        src, dst = _end(row), _end(col)
        if arrow == "<-":
            src, dst = dst, src
        # the executor: the destination with remote read, else the source
        executor = (dst if p2p["remote_read"] else src) if arrow != "<-" else (src if p2p["remote_read"] else dst)
        exe = exe_kind if executor != HOST else "CPU"
        exe_index = executor if isinstance(executor, int) else 0
        method = _method(exe, exe_index, src, dst, "G" if src != HOST else "C", "G" if dst != HOST else "C")
        extra: dict[str, Any] = {"test": "p2p", "executor": f"{exe}{exe_index if exe != 'CPU' else ''}",
                                 "numa_row": row[1] if row[0] == "CPU" else None,
                                 "numa_col": col[1] if col[0] == "CPU" else None}
        if p2p["bi"] and src != dst:
            if arrow == "<->":
                out.add(n, _end(row), _end(col), method, "p2p", size, gb_per_s=gb, direction="bi", scope="total",
                        group=p2p["group"], extra=extra)
            else:
                out.add(n, src, dst, method, "p2p", size, gb_per_s=gb, direction="bi", group=p2p["group"],
                        extra={**extra, "transfers": [[src, dst], [dst, src]]})
        elif not p2p["bi"]:
            out.add(n, src, dst, method, "p2p", size, gb_per_s=gb, group=p2p["group"], extra=extra)
