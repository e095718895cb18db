"""nvbandwidth output (plain text and ``-j`` JSON) as Measurements.

What each testcase measures, from nvbandwidth v0.8's sources (testcases_ce.cpp, testcases_sm.cpp,
output.cpp, json_output.cpp, inline_common.h in ../shared/anchors/src/nvbandwidth):

* a matrix per testcase, printed after its description line; rows are labelled by a number, the
  header line holds the column numbers; ``N/A`` where nothing was measured (output.cpp
  ``addTestcaseResults``, inline_common.h ``operator<<``). JSON keeps the same matrix as strings
  under ``nvbandwidth.testcases[i].bandwidth_matrix`` (json_output.cpp); a testcase printing
  several matrices (the bidirectional device-to-device ones: Read1/Read2/Total) appends their rows
  to one matrix there, so it has 3 x n rows.
* ``device_to_device_memcpy_write_ce``: value(row r, column c) = a copy from GPU r to GPU c in
  r's context (``doMemcpy(srcBuffer, peerBuffer)``); ``..._read_ce``: a copy from c to r in r's
  context (the destination reads). ``_sm`` variants are kernel copies (write: sm-push, read: sm-pull).
  Bidirectional: "1" is the copy c -> r, "2" the copy r -> c running at the same time, "Total" their sum.
* host tests: a 1 x n matrix, column = GPU; ``host_to_device`` copies host -> GPU,
  ``device_to_host`` GPU -> host; bidirectional host tests report the named direction while the
  other runs; ``all_to_host`` / ``host_to_all``: each GPU's copy while every GPU copies.
* ``all_to_one`` / ``one_to_all``: a 1 x n matrix of totals (TOTAL_BW) into / out of GPU c while
  every other GPU copies to / from it.
* ``device_local_copy``: a copy inside GPU c; latency tests print nanoseconds.
* the buffer size is not printed (nor written to the JSON): 512 MiB unless the caller says
  (``nvbandwidth -b``, common.h ``defaultBufferSize``).
* each testcase's outcome (nvbandwidth.cpp ``runTestcase`` lines 150-175, output.cpp ``addTestcase`` /
  ``setTestcaseStatusAndAddIfNeeded``): ``Running <key>.`` when it starts, ``Error: <message>`` when it
  throws; a waived testcase prints only ``Waived: `` (no name: the text names it only when a
  ``Running`` line came before, as hand-written samples do; ``-j`` always names it), an unknown
  ``-t`` key ``ERROR: Testcase <key> not found!``. PeerRun.outcomes keeps them by key; a testcase
  started that printed no matrix (a crash, a cut output) stays ``Running``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ...errors import SchemaError
from ...patterns.methods import CE_READ, CE_WRITE, D2H, H2D, SM_PULL, SM_PUSH
from ...userfiles import refuse_malformed
from ..schema import ALL, HOST, Endpoint, Measurement
from .common import (
    Collector,
    Lines,
    Outcome,
    PeerRun,
    RunContext,
    check_rate,
    gpu_index,
    matrix_values,
    number,
    unread_line,
)

TOOL = "nvbandwidth"
DEFAULT_SIZE_BYTES = 512 * 1024 * 1024  # nvbandwidth common.h: defaultBufferSize = 512 (MiB)


@dataclass(frozen=True)
class _Case:
    method: str
    kind: str  # d2d, d2d-bi, h2d, d2h, h2d-bi, d2h-bi, all-to-host, host-to-all, all-to-one, one-to-all, local, latency-*
    host_method: bool = False


def _case(name: str) -> _Case | None:
    """What testcase ``name`` measures (None for one this parser does not know)."""
    sm = name.endswith("_sm")
    if name == "device_local_copy":
        return _Case("local", "local")
    if name == "host_device_latency_sm":
        return _Case("host-read", "latency-host")
    if name == "device_to_device_latency_sm":
        return _Case("remote-read", "latency-d2d")
    base = name.removeprefix("multinode_")
    if base.startswith("device_to_device"):
        read = "_read_" in base
        method = (SM_PULL.key if read else SM_PUSH.key) if sm else (CE_READ.key if read else CE_WRITE.key)
        return _Case(method, "d2d-bi" if "bidirectional" in base else "d2d")
    if base.startswith(("all_to_one", "one_to_all")):
        read = "_read_" in base
        method = (SM_PULL.key if read else SM_PUSH.key) if sm else (CE_READ.key if read else CE_WRITE.key)
        return _Case(method, "all-to-one" if base.startswith("all_to_one") else "one-to-all")
    host_kinds = (("host_to_device", H2D.key), ("device_to_host", D2H.key), ("all_to_host", "all-to-host"),
                  ("host_to_all", "host-to-all"))
    for prefix, kind in host_kinds:
        if base.startswith(prefix):
            to_gpu = kind in (H2D.key, "host-to-all")
            if sm:  # a kernel on the GPU loads host memory (host -> GPU) or stores into it
                method = SM_PULL.key if to_gpu else SM_PUSH.key
            else:
                method = H2D.key if to_gpu else D2H.key
            return _Case(method, kind + ("-bi" if "bidirectional" in base else ""), True)
    return None


def _case_of_description(desc: str) -> str | None:
    """The testcase a description line belongs to when unambiguous (testcases_ce.cpp / _sm.cpp:
    device-to-device read tests print ``GPU(row) -> GPU(column)``, write tests ``<-``; host tests
    ``CPU(row) -> GPU(column)`` and ``<-``; the bidirectional ones are ambiguous)."""
    m = re.match(r"^memcpy (CE|SM) (CPU|GPU)\(row\) (->|<-) GPU\(column\) bandwidth \(GB/s\)$", desc)
    if m is None:
        return None
    engine, rows, arrow = m.group(1).lower(), m.group(2), m.group(3)
    if rows == "GPU":
        return f"device_to_device_memcpy_{'read' if arrow == '->' else 'write'}_{engine}"
    return f"{'host_to_device' if arrow == '->' else 'device_to_host'}_memcpy_{engine}"


_DESC = re.compile(r"\((GB/s|ns)\)\s*$")
_VERSION = re.compile(r"^nvbandwidth Version:\s*(\S+)")
_STATUS = re.compile(r"^(Waived|Error|Not Found)\b\s*:?\s*(.*)$", re.I)  # "<status>: <message>" (output.cpp)
_NOT_FOUND = re.compile(r"^Testcase (\S+) not found!?$")  # nvbandwidth.cpp findTestcase's message
_STATUS_NOTE = {"Waived": "waived by nvbandwidth", "Error": "nvbandwidth reported an error",
                "Not Found": "not found by nvbandwidth"}
_DEVICE = re.compile(r"^Device (\d+): (.*?)(?: \([0-9a-fA-F:]+\))?\s*$")


def looks_like(text: str) -> bool:
    head = text[:4000]
    return bool(re.search(r"^nvbandwidth Version:", head, re.M)) or '"nvbandwidth"' in head or \
        bool(re.search(r"^Running \w+_(ce|sm|copy)\.\s*$", head, re.M))


class _Emitter:
    def __init__(self, out: Collector, n_gpus: int, size_bytes: int) -> None:
        self.out, self.n, self.size = out, n_gpus, size_bytes
        # each cell ran alone (no group), except the three matrices of a bidirectional pair: one run
        self.pair_groups: dict[tuple[str, int, int], int] = {}

    def matrix(self, test: str, case: _Case, desc: str, rows: list[tuple[int, list[float | None]]], line_of: list[int]) -> None:
        """Measurements of one printed matrix (``rows``: (row label, values by column))."""
        unit_ns = desc.rstrip().endswith("(ns)")
        part = "total" if re.search(r" Total |\[Total \]", desc) else ("1" if re.search(r"(Read|Write)1 ", desc) else
                                                  ("2" if re.search(r"(Read|Write)2 ", desc) else ""))
        n = max(self.n, max((len(v) for _, v in rows), default=0))
        extra_base: dict[str, Any] = {"test": test, "description": desc.strip()}
        for (r, values), line in zip(rows, line_of):
            for c, value in enumerate(values):
                if value is None:
                    continue
                extra = dict(extra_base)
                if unit_ns:
                    src, dst = ((HOST, c) if case.kind == "latency-host" else (c, r))
                    if src == dst:
                        continue
                    extra["latency_kind"] = case.method
                    self.out.add(line, src, dst, case.method, "latency", 0, latency_us=value / 1000.0, extra=extra)
                    continue
                check_rate(value, self.out_lines, line)
                self._bandwidth(case, r, c, value, line, part, n, extra)

    out_lines: Lines | None = None

    def _bandwidth(self, case: _Case, r: int, c: int, value: float, line: int, part: str, n: int, extra: dict) -> None:
        add, size = self.out.add, self.size
        g = None
        if case.kind == "d2d-bi":  # Read1/Write1 (c -> r), 2 (r -> c) and Total of one cell: one run
            g = self.pair_groups.setdefault((str(extra.get("test")), r, c), len(self.pair_groups) + 1)
        others = [o for o in range(n) if o != c]
        kind = case.kind
        if kind == "local":
            add(line, c, c, case.method, "local", size, gb_per_s=value, group=g, extra=extra)
        elif kind == "d2d":
            src, dst = (c, r) if case.method in (CE_READ.key, SM_PULL.key) else (r, c)
            add(line, src, dst, case.method, "matrix", size, gb_per_s=value, group=g, extra=extra)
        elif kind == "d2d-bi":
            if part == "total":
                add(line, r, c, case.method, "matrix", size, gb_per_s=value, direction="bi", scope="total", group=g,
                    extra=extra)
            else:
                src, dst = (c, r) if part == "1" else (r, c)
                add(line, src, dst, case.method, "matrix", size, gb_per_s=value, direction="bi", group=g,
                    extra={**extra, "transfers": [[c, r], [r, c]]})
        elif kind in (H2D.key, D2H.key, "h2d-bi", "d2h-bi"):
            to_gpu = kind.startswith(H2D.key)
            src_end, dst_end = (HOST, c) if to_gpu else (c, HOST)
            if kind.endswith("-bi"):
                add(line, src_end, dst_end, case.method, "host", size, gb_per_s=value, direction="bi", group=g,
                    extra={**extra, "transfers": [[HOST, c], [c, HOST]]})
            else:
                add(line, src_end, dst_end, case.method, "host", size, gb_per_s=value, group=g, extra=extra)
        elif kind.startswith(("all-to-host", "host-to-all")):
            to_gpu = kind.startswith("host-to-all")
            src_end, dst_end = (HOST, c) if to_gpu else (c, HOST)
            flows: list[list[Endpoint]] = [[HOST, o] if to_gpu else [o, HOST] for o in range(n)]
            if kind.endswith("-bi"):
                flows += [[o, HOST] if to_gpu else [HOST, o] for o in range(n)]
            add(line, src_end, dst_end, case.method, "all-to-host" if not to_gpu else "host-to-all", size, gb_per_s=value,
                direction="bi" if kind.endswith("-bi") else "uni", group=g, extra={**extra, "transfers": flows})
        elif kind == "all-to-one":
            add(line, ALL, c, case.method, "all-to-one", size, gb_per_s=value, scope="total", group=g,
                extra={**extra, "transfers": [[o, c] for o in others]})
        elif kind == "one-to-all":
            add(line, c, ALL, case.method, "one-to-all", size, gb_per_s=value, scope="total", group=g,
                extra={**extra, "transfers": [[c, o] for o in others]})


def default_size_bytes(version: str) -> int:
    """nvbandwidth's default buffer when ``-b`` is not given: 64 MiB up to v0.6, 512 MiB from v0.7
    (common.h ``defaultBufferSize``: ``64; // 64MB`` at tags v0.1-v0.6, ``512;  // 512 MiB`` at v0.7
    and v0.8, github.com/NVIDIA/nvbandwidth). An unknown version is taken as the newest."""
    m = re.match(r"^v?(\d+)\.(\d+)", version.strip())
    if m and (int(m.group(1)), int(m.group(2))) < (0, 7):
        return 64 * 1024 * 1024
    return DEFAULT_SIZE_BYTES


def _old_bidir_part(case: _Case) -> str:
    """Which part an unlabelled bidirectional device-to-device matrix is (nvbandwidth v0.1-v0.5 print
    one matrix, "GPU(row) <-> GPU(column) bandwidth"): the SM tests sum both copies (memcpy.h:
    ``MemcpyOperationSM`` defaults to ``SUM_BW`` at v0.2-v0.4, ``TOTAL_BW`` at v0.5), the CE tests
    report the first copy (``USE_FIRST_BW``) while the other runs. From v0.6 each part is labelled."""
    return "total" if case.method in (SM_PULL.key, SM_PUSH.key) else "1"


# nvbandwidth.cpp (v0.8, the anchors' source: line 274) warns when -b is below defaultBufferSize and never prints
# the size it ran with; its text says 64MB in every version, whatever the default
_SMALLER_NOTE = "NOTE: You have chosen a buffer size that is smaller than the default buffer size"
_SMALLER_WHY = ("nvbandwidth ran with a buffer smaller than its default (its NOTE) and does not print the size; "
                "state it with --sizes")


def _marked_size_unknown(items: list[Measurement], size_from: str, unknown: bool) -> tuple[list[Measurement], str]:
    """The rates marked ``extra["size_unknown"]`` (the judge leaves them alone, saying why) where the run's
    buffer was below the default and the size was not stated; the run context's ``size_from`` to match."""
    if not unknown:
        return items, size_from
    return ([replace(m, extra={**(m.extra or {}), "size_unknown": _SMALLER_WHY}) if m.bandwidth is not None else m
             for m in items], f"unknown: {_SMALLER_WHY}")


_WAIVING = re.compile(r"^Waiving (\S+?)\.?$")  # v0.1-v0.4: nvbandwidth.cpp runTestcase
_FAILED_CHECK = re.compile(r"^(?:Invalid value when checking the pattern|ASSERT in expression|\[CUDA_ERROR_\w+\]|"
                           r"\[\w+\] .* in expression|NVML_ERROR:)")  # kernels.cu memcmp, error_handling.h
_CLOSING = re.compile(r"^(?:SUM|&&&& PERF) (\S+)")  # inline_common.h: after every matrix


@refuse_malformed("nvbandwidth output")
def parse_text(text: str, source: str, size_bytes: int | None = None) -> PeerRun:
    lines = Lines(text, source)
    version = ""
    gpus: list[str] = []
    context: dict[str, str] = {}
    notes: list[str] = []
    outcomes: dict[str, Outcome] = {}
    out = Collector(TOOL, "", source)
    emit = _Emitter(out, 0, size_bytes or DEFAULT_SIZE_BYTES)
    emit.out_lines = lines
    test, case, desc = "", None, ""
    header: list[int] | None = None
    rows: list[tuple[int, list[float | None]]] = []
    line_of: list[int] = []
    incomplete: list[str] = []
    printed: set[str] = set()
    old_layout = False
    smaller = False  # the run's -b was below the version's default (its NOTE), and the output prints no size

    def flush() -> None:
        nonlocal rows, line_of, header
        if case is not None and rows:
            emit.n = max(emit.n, len(gpus))
            want = 1 if case.kind not in ("d2d", "d2d-bi") else len(header or ())
            if desc.rstrip().endswith("(ns)") and case.kind == "latency-d2d":
                want = len(header or ())
            if len(rows) < want:
                incomplete.append(f"the matrix of {test or 'a testcase'} has {len(rows)} of its {want} rows")
            emit.matrix(test, case, desc, rows, line_of)
            printed.add(test)
        rows, line_of, header = [], [], None

    def fail_running(n: int, message: str) -> None:
        key = test if outcomes.get(test) == Outcome("Running") else ""
        data_check = message.startswith("Invalid value") or "CUDA_ERROR_ASSERT" in message or "ASSERT" in message
        word = "a data check failed (ASSERT)" if data_check else "an error"
        if key:
            outcomes[key] = Outcome("Error", message)
            notes.append(f"{key}: {word}: {message[:160]}")
        else:
            notes.append(f"{source}:{n}: {word} outside a testcase: {message[:160]}")

    for number_, raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        m = _VERSION.match(stripped)
        if m:
            version = out.version = m.group(1)
            if size_bytes is None:
                emit.size = default_size_bytes(version)
            continue
        m = _DEVICE.match(stripped)
        if m and header is None:
            index = gpu_index(m.group(1), lines, number_)
            if index > len(gpus):
                out.skip(number_, f"device {index} listed before device {len(gpus)}")
            elif index == len(gpus):
                gpus.append(m.group(2).strip())
            continue  # (an index seen before: a second run appended to the file lists its devices again)
        if stripped.startswith(_SMALLER_NOTE):
            smaller = True
            continue
        for key in ("CUDA Runtime Version", "CUDA Driver Version", "Driver Version"):
            if stripped.startswith(key + ":"):
                context[key.lower().replace(" ", "_")] = stripped.split(":", 1)[1].strip()
        if stripped.startswith("Running ") and stripped.endswith("."):
            flush()
            if outcomes.get(test) == Outcome("Running") and test:
                incomplete.append(f"{test} started, and {stripped[len('Running '):-1]} started before its closing SUM line")
            test = stripped[len("Running "):-1].strip()
            case = _case(test)
            outcomes[test] = Outcome("Running")
            if case is None:
                notes.append(f"{source}:{number_}: testcase {test!r} is not known to this parser; left out")
            desc = ""
            continue
        m = _WAIVING.match(stripped)
        if m:
            flush()
            outcomes[m.group(1)] = Outcome("Waived")
            notes.append(f"{m.group(1)}: {_STATUS_NOTE['Waived']}")
            continue
        if _FAILED_CHECK.match(stripped):
            flush()
            fail_running(number_, stripped)
            continue
        m = _STATUS.match(stripped)
        if m:
            flush()
            status, message = m.group(1).title(), m.group(2).strip()
            named = _NOT_FOUND.match(message)
            # the testcase started last, while it has no outcome yet (a status line ends it, as SUM does)
            key = named.group(1) if named else (test if outcomes.get(test) == Outcome("Running") else "")
            if named:
                status = "Not Found"
            else:
                test, case = "", None
            if key:
                outcomes[key] = Outcome(status, message)
                notes.append(f"{key}: {_STATUS_NOTE[status]}" + (f": {message}" if message else ""))
            else:
                notes.append(f"{source}:{number_}: a testcase {_STATUS_NOTE[status]}, unnamed in text output"
                             + (f": {message}" if message else "") + " (nvbandwidth -j names it)")
            continue
        m = _CLOSING.match(stripped)
        if m:
            flush()
            key = m.group(1)
            if key in (test, f"{test}_total"):  # the testcase ended (a bidirectional one prints
                if outcomes.get(test) == Outcome("Running"):  # SUM <test>_read1 ... between its matrices)
                    outcomes[test] = Outcome("Passed")
                test, case = "", None
            continue
        described = _case_of_description(stripped) if _DESC.search(stripped) else None
        if described is not None and case is not None and test and _case(described) != case and desc:
            # another testcase's description while one runs without its SUM: its "Running" line was lost
            flush()
            test, case = "", None
        if _DESC.search(stripped) and (case is not None or (not test and described is not None)):
            flush()
            if case is None:  # the "Running <test>." line was cut from the output: the description says it
                test = _case_of_description(stripped) or ""
                case = _case(test)
                outcomes[test] = Outcome("Running")
                notes.append(f"{source}:{number_}: no 'Running' line before {stripped!r}: read as {test}")
            desc = stripped
            if case is not None and case.kind == "d2d-bi" and not re.search(r"(Read|Write)[12] |\bTotal ", desc):
                old_layout = True
                desc = f"{desc} [{'Total' if _old_bidir_part(case) == 'total' else 'Read1'} ]"
            continue
        if desc and header is None and stripped and all(tok.isdigit() for tok in stripped.split()):
            header = [gpu_index(tok, lines, number_) for tok in stripped.split()]
            continue
        if header is not None:
            if not stripped:
                flush()
                desc = ""
                continue
            tokens = stripped.split()
            label, cells = tokens[0], tokens[1:]
            values = matrix_values(out, lines, number_, cells if label.isdigit() else tokens, len(header),
                                   rates=not desc.rstrip().endswith("(ns)"), what=test or "a matrix")
            if values is None:
                if len(cells) != len(header) or not label.isdigit():
                    incomplete.append(f"a row of {test or 'a matrix'} is cut (line {number_})")
                continue
            rows.append((gpu_index(label, lines, number_), values))
            line_of.append(number_)
    flush()
    out.cut(lines)
    if lines.cut_line is not None:
        incomplete.append("the last line has no final newline (cut)")
    unfinished = [key for key, o in outcomes.items() if o.status == "Running"]
    notes += [f"{key}: printed a matrix but no closing 'SUM {key}' line (a crash or a cut output)" if key in printed
              else f"{key}: started, printed no result" for key in unfinished]
    incomplete += [f"{key} has no closing SUM line" for key in unfinished]
    if not out.items and not outcomes:
        raise SchemaError(f"{source}: no nvbandwidth result in it (no testcase matrix)",
                          hint="pass the output of nvbandwidth (text, or -j JSON)")
    if not out.items and out.unread and not any(o.status in ("Waived", "Error", "Not Found") for o in outcomes.values()):
        raise SchemaError(f"{source}: no number of it could be read; {unread_line(out.unread)}")
    if not out.items and outcomes and all(o.status == "Waived" for o in outcomes.values()):
        notes.append(f"every testcase was waived ({len(outcomes)}): nvbandwidth found nothing it could run here "
                     "(for peer tests: no GPU pair with peer access)")
    size_from = "option" if size_bytes is not None else (f"default of {version}" if version else
                                                          "default of the newest version (the output names none)")
    items, size_from = _marked_size_unknown(out.items, size_from, smaller and size_bytes is None)
    run_context = RunContext(default_size_bytes=emit.size, size_from=size_from, launcher=lines.launcher,
                             layout="before v0.6 (unlabelled bidirectional matrices)" if old_layout else "")
    return PeerRun(TOOL, version, source, tuple(items), tuple(gpus), context, tuple(notes), outcomes=outcomes,
                   unread=tuple(out.unread), complete=not incomplete, incomplete="; ".join(dict.fromkeys(incomplete)),
                   run_context=run_context)


_JSON_DEVICE = re.compile(r"^(\d+): (.*?)(?: \([0-9a-fA-F:]+\))?(?:: \(.*\))?$")


@refuse_malformed("nvbandwidth JSON")
def parse_json(data: Any, source: str, size_bytes: int | None = None) -> PeerRun:
    if not isinstance(data, dict) or not isinstance(data.get(TOOL), dict):
        raise SchemaError(f"{source}: not nvbandwidth -j output (no \"nvbandwidth\" object)")
    root = data[TOOL]
    version = str(root.get("version", ""))
    gpus = []
    for item in root.get("GPU Device list") or []:
        m = _JSON_DEVICE.match(str(item))
        gpus.append(m.group(2) if m else str(item))
    context = {k.lower().replace(" ", "_"): root[k] for k in ("CUDA Runtime Version", "Driver Version") if k in root}
    cases = root.get("testcases")
    if not isinstance(cases, list):
        raise SchemaError(f"{source}: nvbandwidth.testcases must be a list")
    out = Collector(TOOL, version, source)
    emit = _Emitter(out, len(gpus), size_bytes or default_size_bytes(version))
    notes: list[str] = []
    labelled = default_size_bytes(version) == DEFAULT_SIZE_BYTES or bool(re.match(r"^v?0\.6\b", version))
    outcomes: dict[str, Outcome] = {}
    for i, tc in enumerate(cases):
        if not isinstance(tc, dict):
            raise SchemaError(f"{source}: testcase {i} must be an object")
        name = str(tc.get("name", ""))
        case = _case(name)
        status = str(tc.get("status", ""))
        outcomes[name] = Outcome(status or "unknown", str(tc.get("error", "")))
        if status != "Passed" or "bandwidth_matrix" not in tc:
            notes.append(f"{name}: status {status or 'unknown'}{': ' + str(tc['error']) if 'error' in tc else ''}")
            continue
        if case is None:
            notes.append(f"testcase {name!r} is not known to this parser; left out")
            continue
        matrix = tc["bandwidth_matrix"]
        if not isinstance(matrix, list) or not all(isinstance(row, list) for row in matrix):
            raise SchemaError(f"{source}: testcase {name!r}: bandwidth_matrix must be a list of rows")
        desc = str(tc.get("bandwidth_description", ""))
        values = [[None if str(v) == "N/A" else number(str(v), what=f"{name} value") for v in row] for row in matrix]
        parts = [(desc, values)]
        if case.kind == "d2d-bi" and not labelled:  # v0.5: one unlabelled matrix
            parts = [(f"{desc} [{'Total' if _old_bidir_part(case) == 'total' else 'Read1'} ]", values)]
        elif case.kind == "d2d-bi" and len(values) % 3 == 0 and len(values) >= 3:
            k = len(values) // 3  # Read1/Write1, Read2/Write2, Total appended to one matrix
            word = "Read" if "read" in name else "Write"
            parts = [(f"{word}1 bandwidth", values[:k]), (f"{word}2 bandwidth", values[k:2 * k]),
                     (" Total bandwidth", values[2 * k:])]
        for part_desc, part in parts:
            emit.n = max(len(gpus), max((len(r) for r in part), default=0))
            emit.matrix(name, case, part_desc + (" (ns)" if "latency" in name and "(ns)" not in part_desc else ""),
                        list(enumerate(part)), [0] * len(part))
    if not out.items and not notes:
        raise SchemaError(f"{source}: no nvbandwidth testcase in it")
    size_from = "option" if size_bytes is not None else f"default of {version or 'the newest version'}"
    # -j keeps the NOTE as nvbandwidth.warning (json_output.cpp recordWarning), and no buffer size either
    smaller = str(root.get("warning", "")).startswith(_SMALLER_NOTE)
    items, size_from = _marked_size_unknown(out.items, size_from, smaller and size_bytes is None)
    return PeerRun(TOOL, version, source, tuple(items), tuple(gpus), context, tuple(notes), outcomes=outcomes,
                   run_context=RunContext(default_size_bytes=emit.size, size_from=size_from))
